package gateway

import (
	"errors"
	"net/http"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/tokens"
)

// rawAnswer is the problem p as a caller that presented no signed token
// (a raw epoch, or none) on a route taking raw epochs may see it. Such a
// caller proves nothing, so the answer tells no epoch it did not send: the
// current and highest issued epochs are left out (the logs, spans and
// audit keep them), and the detail of a stale or never-issued epoch says
// only which it is, or why the presented epoch no longer leads (a lapse, a
// release: that names no other epoch). A refusal of a leased resource
// names the signed route to write through, when one of routes serves the
// resource. err is the refusal p was made from.
func rawAnswer(p problem.Problem, err error, r *http.Request, routes *Routes) problem.Problem {
	p.CurrentEpoch = nil
	switch p.Type {
	case problem.TypeStaleEpoch:
		if stale, ok := errors.AsType[*tokens.StaleEpochError](err); !ok || stale.Reason == "" {
			p.Detail = "the epoch is below the resource's current epoch"
		}
	case problem.TypeEpochNotIssued:
		p.Detail = "the epoch is above the highest epoch issued for the resource"
	case problem.TypeRawOnLeased:
		p.Detail = (&tokens.RawOnLeasedError{Resource: p.Resource}).Error()
		if routes == nil {
			break
		}
		if sr := routes.Table().SignedRouteFor(p.Resource, r); sr != nil {
			p.Detail += "; write through the signed route " + sr.Name
			if sr.Name != sr.Prefix {
				p.Detail += " (prefix " + sr.Prefix + ")"
			}
			p.Detail += " with the lease's token"
		}
	}
	return p
}
