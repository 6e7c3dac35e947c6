package wire

// Header names of the fencing contract.
const (
	// TokenHeader carries the client's fencing token. It never reaches the upstream.
	TokenHeader = "Fencing-Token"
	// EpochHeader tells the upstream the admitted epoch.
	EpochHeader = "Fencing-Epoch"
	// ResourceHeader names the resource: set by the gateway toward the
	// upstream, and read from clients on routes that name no resource.
	ResourceHeader = "Fencing-Resource"
)
