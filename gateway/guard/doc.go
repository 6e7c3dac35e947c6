// Package guard is the gateway's framing guard: an incremental HTTP/1.1
// framing scanner on every proxy connection (NewListener), the answer to
// requests that broke framing (Guarded), the connection limit
// (LimitConnections) and the per-request body and answer deadlines
// (Budget).
package guard
