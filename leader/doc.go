// Package leader is the Go client of fencegw's lease API: an Elector that
// campaigns for a named lease, keeps it by renewing, and fences its own
// writes with the lease's token.
//
// It runs the loop of the seed article (a lease with an epoch that rises on
// every grant) with the timing arithmetic of Kubernetes' client-go
// leaderelection, and adds what client-go lacks: fencing.
//
//   - Not leading, the Elector asks the token authority for the lease every
//     RetryPeriod (with jitter). A grant makes it leader for one Term, whose
//     Epoch is higher than every earlier grant of the lease.
//   - Leading, it renews every RenewInterval (retrying every RetryPeriod after
//     a failure) and steps down on its own monotonic clock once no renewal has
//     succeeded for RenewDeadline, measured from when the last successful
//     renewal was sent. Because LeaseDuration > RenewDeadline, it stops
//     leading before a rival may legally take over.
//   - The RoundTripper returned by Transport attaches the term's token (or its
//     epoch, when the authority issues no token) as the Fencing-Token header,
//     refuses to send anything while not leading, and steps down at once when
//     the gateway refuses the epoch as stale (412 with the problem type
//     urn:fencegw:problem:stale-epoch: a newer epoch was granted). An
//     upstream's own 412 behind the gateway (an If-Match that failed) does
//     not end the term. The token goes only to the origin the request was
//     addressed to: a redirect to another scheme, host or port is followed
//     without it.
//
// Stepping down is not what makes a stale leader harmless: a paused process
// cannot step down while paused. The gateway's fence is; the Elector only
// stops asking for writes it knows would be refused, and tells the work to
// stop through the context it gave OnStartedLeading.
package leader
