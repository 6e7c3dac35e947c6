// Package observe is the gateway's telemetry: the Observer (spans, decision
// and store metrics, the audit hook), the HTTP server and client
// instrumentation, the observed store, and the RefusalLog that throttles
// the log lines of refusals.
package observe
