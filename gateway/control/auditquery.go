package control

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fencegw/fencegw/tokens"
)

// auditParamNames lists the parameters an audit list accepts.
const auditParamNames = "cursor, decision, event, holder, limit, name, replica, resource, since, until"

// auditField names the field an audit list's parameter sets: resource
// and name are one parameter, decision and event another, on both lists
// (the README's "resource (or name), decision (or event)").
func auditField(param string) (field string, known bool) {
	switch param {
	case "resource", "name":
		return "resource", true
	case "decision", "event":
		return "kind", true
	case "holder", "replica", "since", "until", "limit", "cursor":
		return param, true
	}
	return "", false
}

// auditKinds are the kinds each audit list records: what its decision (or
// event) parameter may name.
func auditKinds(stream tokens.AuditStream) []string {
	if stream == tokens.AuditLeases {
		return []string{tokens.LeaseAcquired, tokens.LeaseRenewed, tokens.LeaseReleased, tokens.LeaseExpired}
	}
	return []string{string(tokens.DecisionStale), string(tokens.DecisionMissing), string(tokens.DecisionInvalid),
		string(tokens.DecisionForbidden), string(tokens.DecisionForged), string(tokens.DecisionUnavailable)}
}

// queryError is a malformed query parameter: Param is the name the client
// used ("query" when no name could be read).
type queryError struct {
	Param, Problem string
}

func (e *queryError) Error() string { return e.Param + ": " + e.Problem }

// queryParam is one name=value pair of a raw query, both decoded.
type queryParam struct{ name, value string }

// parseRawQuery splits a raw query on '&' and decodes each pair strictly:
// invalid percent-encoding and an unencoded ';' (which some servers read
// as a separator) are errors, where url.ParseQuery would drop the pair.
// Empty pairs ("a=1&&b=2") carry nothing and are skipped.
func parseRawQuery(raw string) ([]queryParam, error) {
	var out []queryParam
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(piece, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil || strings.Contains(rawName, ";") {
			return nil, &queryError{"query", "a parameter name " + strconv.Quote(rawName) + " is not validly percent-encoded"}
		}
		if strings.Contains(rawValue, ";") {
			return nil, &queryError{name, "contains an unencoded ';' (send it as %3B)"}
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, &queryError{name, "is not validly percent-encoded"}
		}
		out = append(out, queryParam{name, value})
	}
	return out, nil
}

// auditQuery reads an audit page's query string strictly: the filters
// (resource or name, decision or event, holder, replica; a resource or
// holder must pass tokens.ValidateResource), since and until
// (RFC 3339, from 1970 on, since not after until), limit (1 to
// maxAuditPage) and cursor (an ID this API returned). Anything else —
// an unknown or repeated parameter, a value that does not parse, a kind
// the stream does not record — is answered 400 naming the parameter,
// and ok is false.
func auditQuery(w http.ResponseWriter, r *http.Request, stream tokens.AuditStream) (q tokens.AuditQuery, ok bool) {
	q, err := parseAuditQuery(r.URL.RawQuery, stream)
	if err != nil {
		badRequest(w, r, err.Error())
		return q, false
	}
	return q, true
}

// parseAuditQuery is auditQuery without the answer; its error is a
// *queryError.
func parseAuditQuery(raw string, stream tokens.AuditStream) (tokens.AuditQuery, error) {
	q := tokens.AuditQuery{Stream: stream, Limit: defaultAuditPage}
	params, err := parseRawQuery(raw)
	if err != nil {
		return q, err
	}
	seen := map[string]string{}
	for _, p := range params {
		field, known := auditField(p.name)
		if !known {
			return q, &queryError{strconv.Quote(p.name), "unknown parameter (known: " + auditParamNames + ")"}
		}
		if first, dup := seen[field]; dup {
			return q, &queryError{p.name, "given more than once (as " + first + " and " + p.name + ")"}
		}
		seen[field] = p.name
		if err := setAuditParam(&q, field, p); err != nil {
			return q, err
		}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return q, &queryError{"since", "is after until"}
	}
	return q, nil
}

// setAuditParam sets q's field from p, checking p's value.
func setAuditParam(q *tokens.AuditQuery, field string, p queryParam) error {
	var err error
	switch field {
	case "resource":
		if verr := tokens.ValidateResource(p.value); verr != nil {
			return &queryError{p.name, fmt.Sprintf("is not a resource name: %v", verr)}
		}
		q.Resource = p.value
	case "kind":
		if kinds := auditKinds(q.Stream); !slices.Contains(kinds, p.value) {
			return &queryError{p.name, "must be one of " + strings.Join(kinds, ", ")}
		}
		q.Kind = p.value
	case "holder":
		// A holder is a name like a resource's, refused the same way
		// wherever it is accepted.
		if verr := tokens.ValidateResource(p.value); verr != nil {
			return &queryError{p.name, fmt.Sprintf("is not a holder name: %v", verr)}
		}
		q.Holder = p.value
	case "replica":
		q.Replica, err = textParam(p)
	case "since":
		q.Since, err = timeParam(p)
	case "until":
		q.Until, err = timeParam(p)
	case "limit":
		q.Limit, err = limitParam(p)
	case "cursor":
		if !tokens.ValidAuditID(p.value) {
			return &queryError{p.name, "is not a next_cursor this API returned"}
		}
		q.Before = p.value
	}
	return err
}

// textParam checks a name filter: non-empty UTF-8 without control
// characters.
func textParam(p queryParam) (string, error) {
	if p.value == "" || !utf8.ValidString(p.value) || strings.IndexFunc(p.value, unicode.IsControl) >= 0 {
		return "", &queryError{p.name, "must be non-empty UTF-8 without control characters"}
	}
	return p.value, nil
}

// timeParam parses an RFC 3339 time no earlier than 1970 (the audit's
// IDs count milliseconds from then; the zero time would mean "no
// bound").
func timeParam(p queryParam) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, p.value)
	if err != nil {
		return t, &queryError{p.name, "must be an RFC 3339 time such as 2026-12-03T17:00:00Z"}
	}
	if t.Before(time.Unix(0, 0)) {
		return t, &queryError{p.name, "is before 1970-01-01T00:00:00Z, where the audit begins"}
	}
	return t, nil
}

// limitParam parses a page size: decimal digits only, 1 to maxAuditPage.
func limitParam(p queryParam) (int, error) {
	n, err := strconv.Atoi(p.value)
	if err != nil || n < 1 || n > maxAuditPage || strings.TrimLeft(p.value, "0123456789") != "" {
		return 0, &queryError{p.name, "must be an integer from 1 to " + strconv.Itoa(maxAuditPage)}
	}
	return n, nil
}
