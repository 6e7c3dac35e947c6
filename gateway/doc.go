// Package gateway is fencegw's fenced reverse proxy. The fencing decision
// itself belongs to package tokens, routes to package policy; this package
// maps both onto HTTP. Its parts live below it, each in a package that never
// imports gateway: the problem catalogue (gateway/problem), the request's
// context (gateway/reqctx), the audit recorder (gateway/audit), telemetry
// (gateway/observe), the framing guard (gateway/guard), the upstream
// transport (gateway/upstream), at-most-once writes (gateway/idempotency),
// the control API (gateway/control) and its page (gateway/ui). New composes
// the proxy's parts; server wires the control API.
//
// On a guard.NewListener (with guard.ConnContext installed on the
// server), a request that breaks HTTP/1.1 framing gets 400 (431 for a head over the limit, 501
// for a transfer coding other than chunked) and nothing of it is forwarded;
// the connection closes after the answer.
//
// The proxy's contract, per request on a route:
//   - a method the route does not fence passes through;
//   - a fenced request without a Fencing-Token header gets 428;
//   - a token that does not parse, or a resource that cannot be named, 400;
//   - an epoch below the resource's high-water mark, 412; on a leased
//     resource also an epoch whose grant lapsed or was released, 412;
//   - a store that cannot confirm the admission, 503 with Retry-After;
//   - an admitted request waits for this replica's writes at lower epochs
//     to the resource (DrainEarlierEpochs), 412 superseded when a higher
//     epoch was admitted meanwhile;
//   - an admitted request streams to the upstream with Fencing-Token removed
//     and Fencing-Epoch and Fencing-Resource set; on a leased resource it
//     must be delivered whole before its grant may lapse, or it is cut (412,
//     DeliverBeforeLapse); an upstream that cannot be reached answers 502,
//     one that does not answer in time 504.
//
// Every answer the gateway gives itself is an RFC 9457 problem document.
package gateway

import "github.com/fencegw/fencegw/wire"

// Header names of the fencing contract (see wire).
const (
	// TokenHeader carries the client's fencing token. It never reaches the upstream.
	TokenHeader = wire.TokenHeader
	// EpochHeader tells the upstream the admitted epoch.
	EpochHeader = wire.EpochHeader
	// ResourceHeader names the resource: set by the gateway toward the
	// upstream, and read from clients on routes that name no resource.
	ResourceHeader = wire.ResourceHeader
)
