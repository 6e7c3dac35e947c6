// Package upstream is the gateway's way to its upstreams: the Transport,
// the delivery of leased writes before their grant lapses
// (DeliverBeforeLapse), and the answer to an exchange that failed
// (ErrorHandler).
package upstream
