// Package reqctx holds what a proxied request's context carries from one
// part of the gateway to the next: the route it matched, its admission and
// its exchange with the upstream. It imports no other part of the gateway.
package reqctx
