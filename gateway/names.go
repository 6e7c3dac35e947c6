package gateway

import (
	"net/url"

	"github.com/fencegw/fencegw/tokens"
)

// nameProblems checks the names the query parameters params give (each a
// resource, lease or holder name, when present) with
// tokens.ValidateResource, and appends a problem naming the parameter for
// each one that is refused.
func nameProblems(values url.Values, problems []string, params ...string) []string {
	for _, p := range params {
		if v := values.Get(p); v != "" {
			if err := tokens.ValidateResource(v); err != nil {
				problems = append(problems, p+": "+err.Error())
			}
		}
	}
	return problems
}
