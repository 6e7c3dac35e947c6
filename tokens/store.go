package tokens

import "context"

// Store keeps the high-water mark (HWM) of every resource: the highest epoch
// admitted or granted for it. An HWM never decreases, whatever the input and
// across restarts of the process or of the store.
//
// Every method is safe for concurrent use. Errors other than
// *StaleEpochError and ErrInvalidEpoch/ErrInvalidResource mean the store
// could not confirm the operation; implementations wrap them in
// *UnavailableError.
type Store interface {
	// Current returns the HWM of resource, or 0 if none was ever recorded.
	// The read is linearizable: it reflects every Advance that returned
	// before Current was called.
	Current(ctx context.Context, resource string) (int64, error)

	// Advance raises the HWM of resource to epoch in one atomic step if
	// epoch is not below it, and returns the HWM after the call (epoch).
	// If epoch is below the HWM it changes nothing and returns a
	// *StaleEpochError whose Current is the HWM. If a lease of the same
	// name was ever granted and epoch is above the highest epoch issued,
	// it changes nothing and returns *EpochNotIssuedError. An epoch that
	// is not positive returns an error wrapping ErrInvalidEpoch.
	Advance(ctx context.Context, resource string, epoch int64) (int64, error)

	// Mark returns resource's HWM and the life of the current grant of the
	// lease of the same name, in one linearizable read: it reflects every
	// Advance, grant, renewal and release that returned before it was
	// called. A resource never written and never leased has the zero Mark.
	Mark(ctx context.Context, resource string) (Mark, error)

	// Ping returns nil while the store can confirm operations.
	Ping(ctx context.Context) error

	// Exclusive reports whether this process is the store's only writer, in
	// which case a Fence may treat its cache as the truth.
	Exclusive() bool

	// Close releases the store's resources.
	Close() error

	LeaseStore
	LeaseCounter
	LeaseReclaimer
	IdempotencyStore
	LeaseNotifier
	LeaseWatcher
	AuditStore
}

// KeyKeeper is implemented by shared stores that can keep the token
// authority's generated signing key, so every replica signs with the same.
type KeyKeeper interface {
	// KeepKey stores key under name unless a key is already stored there,
	// and returns the stored key: the first caller's wins.
	KeepKey(ctx context.Context, name string, key []byte) ([]byte, error)
}
