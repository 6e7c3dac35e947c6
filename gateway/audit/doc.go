// Package audit is the gateway's audit recorder: refusals and lease events
// are counted into entries in memory and written to the store's audit in
// the background, so that a request never waits on the audit. It imports
// no other part of the gateway.
package audit
