// Package problem is the gateway's problem catalogue: every error the
// gateway answers maps, through Of, to one catalogue entry (type,
// title, status, fencing decision), sent as an RFC 9457 problem document by
// Write. A verdict is a 4xx; only a failure to confirm is a 503, whose
// cause is logged, never sent. It imports no other part of the gateway.
package problem
