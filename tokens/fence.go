package tokens

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/tokens/internal/coalesce"
)

// DefaultMaxCached is the default number of resources whose HWM a Fence
// keeps in memory; past it, the least recently used are evicted.
const DefaultMaxCached = 1 << 20

// DefaultStoreTimeout bounds each store call a Fence makes on behalf of a
// request, and each coalesced confirmation.
const DefaultStoreTimeout = 2 * time.Second

// Fence decides whether a write carrying an epoch may reach its resource.
//
// It keeps a cache of each resource's HWM. The HWM only grows, so a cached
// value is a safe lower bound: an epoch below it is refused from memory,
// without a store round trip. An epoch at or above it is confirmed:
//   - over an Exclusive store the cache is exact (every change passes through
//     this Fence), so an epoch equal to it is admitted from memory;
//   - over a shared store an epoch equal to the cache is confirmed with a
//     linearizable read that started after the request arrived; concurrent
//     requests for one resource share such reads;
//   - an epoch above the cache advances the store's HWM in one atomic step.
//
// A leased resource (one a lease of the same name was ever granted for) is
// fenced on expiry as well: a write at its current grant's epoch is
// admitted only while that grant is live on the store's clock, and the
// admission says until when, on this process's monotonic clock (see
// DeliverBy). Over an exclusive store the grant's life is cached and read
// again once the cached deadline passes; over a shared store it is read
// with every confirmation.
//
// Admission is linearizable whenever the store is. Errors from the store fail
// closed: the write is not admitted.
type Fence struct {
	store     Store
	exclusive bool
	timeout   time.Duration
	base      time.Time // the origin of since, with a monotonic reading

	cache *hwmCache

	// confirms shares the linearizable reads that confirm an epoch equal
	// to a cached HWM over a shared store.
	confirms *coalesce.Group[markRead]
}

// markRead is a store's Mark and when its read began on this process's
// monotonic clock.
type markRead struct {
	Mark
	start int64 // Fence.since() before the read was sent
}

// FenceOptions tune a Fence; the zero value picks the defaults.
type FenceOptions struct {
	// MaxCached bounds the resources kept in memory (default
	// DefaultMaxCached). Past it, the least recently used are evicted and
	// reloaded from the store when they are written to again.
	MaxCached int
	// StoreTimeout bounds each store call (default DefaultStoreTimeout).
	StoreTimeout time.Duration
}

// NewFence returns a Fence over store.
func NewFence(store Store, o FenceOptions) *Fence {
	if o.MaxCached <= 0 {
		o.MaxCached = DefaultMaxCached
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = DefaultStoreTimeout
	}
	f := &Fence{
		store:     store,
		exclusive: store.Exclusive(),
		timeout:   o.StoreTimeout,
		base:      time.Now(),
		cache:     newHWMCache(o.MaxCached),
	}
	f.confirms = coalesce.New(f.confirmRead)
	return f
}

// Store returns the store the Fence decides over.
func (f *Fence) Store() Store { return f.store }

// Admit decides whether a write to resource carrying epoch may proceed. It
// returns nil when the write is admitted: the HWM is now at least epoch and no
// lower epoch will be admitted afterwards. Otherwise it returns a
// *StaleEpochError (epoch below the HWM, or the resource's lease at epoch
// lapsed or was released), an error wrapping ErrInvalidEpoch or
// ErrInvalidResource, or a *UnavailableError (the store could not confirm;
// the write must not proceed).
func (f *Fence) Admit(ctx context.Context, resource string, epoch int64) error {
	_, err := f.admit(ctx, resource, epoch)
	return err
}

// admit is Admit, and for a leased resource the moment until which the
// admitted grant is known live (the zero Time otherwise).
func (f *Fence) admit(ctx context.Context, resource string, epoch int64) (time.Time, error) {
	if err := ValidateAdvance(resource, epoch); err != nil {
		return time.Time{}, err
	}
	return f.admitUnleased(ctx, resource, epoch, false)
}

// admitUnleased is admit, and when refuseLeased is set a
// *RawOnLeasedError for a resource that is leased (see leasedVerdict). It
// also takes epoch 0, which only Decide passes, once an epoch source
// vouched for it: 0 is never above the HWM, so it is admitted only while
// the resource's HWM is 0, and never raises it.
func (f *Fence) admitUnleased(ctx context.Context, resource string, epoch int64, refuseLeased bool) (time.Time, error) {
	if err := ValidateResource(resource); err != nil {
		return time.Time{}, err
	}
	if epoch < 0 {
		return time.Time{}, fmt.Errorf("%w: %d is negative", ErrInvalidEpoch, epoch)
	}
	st := f.cache.take(resource)
	defer f.cache.put(st)
	if refuseLeased && st.leased.Load() {
		return time.Time{}, &RawOnLeasedError{Resource: resource}
	}
	var by time.Time
	var err error
	if f.exclusive {
		by, err = f.admitExclusive(ctx, st, resource, epoch)
	} else {
		by, err = f.admitShared(ctx, st, resource, epoch)
		if refuseLeased {
			f.learnLeasedBeforeStale(ctx, st, resource, err)
		}
	}
	if err = leasedVerdict(st, refuseLeased, resource, !by.IsZero(), err); err != nil {
		return time.Time{}, err
	}
	return by, nil
}

func (f *Fence) admitExclusive(ctx context.Context, st *resourceState, resource string, epoch int64) (time.Time, error) {
	if st.ready.Load() {
		h := st.hwm.Load()
		if epoch < h {
			return time.Time{}, &StaleEpochError{Resource: resource, Presented: epoch, Current: h}
		}
		if epoch == h {
			switch l := st.leaseEpoch.Load(); {
			case l == 0:
				return time.Time{}, nil
			case l == epoch:
				switch until := st.leaseUntil.Load(); {
				case until == 0:
					// Read lapsed or released: only a new grant, made
					// through this Fence, changes that.
					return time.Time{}, lapsedError(resource, epoch, st.released.Load())
				case f.since() < until:
					return f.at(until), nil
				}
			}
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := f.load(ctx, st, resource); err != nil {
		return time.Time{}, err
	}
	h := st.hwm.Load()
	if epoch < h {
		return time.Time{}, &StaleEpochError{Resource: resource, Presented: epoch, Current: h}
	}
	if epoch > h {
		h, err := f.advance(ctx, resource, epoch)
		switch {
		case err == nil || h > 0: // admitted, or stale with the store's HWM
			st.hwm.Store(h)
		case !IsVerdict(err):
			// The outcome is unknown: the store may hold epoch now. Reload
			// before answering from memory again.
			st.ready.Store(false)
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	l := st.leaseEpoch.Load()
	if l == 0 {
		return time.Time{}, nil
	}
	if until := st.leaseUntil.Load(); l == epoch && f.since() < until {
		return f.at(until), nil
	}
	// The cached deadline passed (or the cache disagrees with itself):
	// read the grant's life again; a renewal may have extended it.
	r, err := f.mark(ctx, resource)
	if err != nil {
		st.ready.Store(false)
		return time.Time{}, err
	}
	f.keepLease(st, r)
	return f.deliverBy(resource, epoch, r)
}

// load fills st from an exclusive store once. The caller holds st.mu.
func (f *Fence) load(ctx context.Context, st *resourceState, resource string) error {
	if st.ready.Load() {
		return nil
	}
	r, err := f.mark(ctx, resource)
	if err != nil {
		return err
	}
	st.hwm.Store(r.HWM)
	f.keepLease(st, r)
	st.ready.Store(true)
	return nil
}

// keepLease caches the lease's life read in r. The caller holds st.mu.
func (f *Fence) keepLease(st *resourceState, r markRead) {
	learnLeased(st, r)
	st.leaseEpoch.Store(r.Lease.Epoch)
	st.released.Store(r.Lease.Released)
	if r.Lease.Left > 0 {
		st.leaseUntil.Store(r.start + int64(trusted(r.Lease.Left)))
	} else {
		st.leaseUntil.Store(0)
	}
}

// deliverBy decides on the lease of resource for a write at epoch, the
// resource's HWM, from the read r: the zero Time when the resource is not
// leased; the moment its grant at epoch is known live until; or a
// *StaleEpochError when that grant lapsed or was released (or another
// grant is current).
func (f *Fence) deliverBy(resource string, epoch int64, r markRead) (time.Time, error) {
	l := r.Lease
	switch {
	case !l.Leased():
		return time.Time{}, nil
	case l.Epoch > epoch:
		return time.Time{}, &StaleEpochError{Resource: resource, Presented: epoch, Current: l.Epoch}
	case l.Epoch < epoch:
		// Every grant raises the HWM to its epoch and no write passes the
		// highest epoch issued, so a store that says this is broken.
		return time.Time{}, &UnavailableError{Op: "confirm", Resource: resource,
			Err: fmt.Errorf("the store admits epoch %d above its lease's epoch %d", epoch, l.Epoch)}
	case l.Left <= 0:
		return time.Time{}, lapsedError(resource, epoch, l.Released)
	}
	return f.at(r.start + int64(trusted(l.Left))), nil
}

func (f *Fence) admitShared(ctx context.Context, st *resourceState, resource string, epoch int64) (time.Time, error) {
	h := st.hwm.Load()
	if epoch < h {
		return time.Time{}, &StaleEpochError{Resource: resource, Presented: epoch, Current: h}
	}
	if epoch > h {
		h, err := f.advance(ctx, resource, epoch)
		raise(&st.hwm, h)
		if err != nil {
			return time.Time{}, err
		}
		// Admitted at the advance. Whether the resource is leased, and
		// its grant live, takes a read: another replica may have granted
		// it.
		r, err := f.confirm(ctx, resource)
		if err != nil {
			return time.Time{}, err
		}
		raise(&st.hwm, r.HWM)
		learnLeased(st, r)
		return f.afterAdvance(resource, epoch, r)
	}
	r, err := f.confirm(ctx, resource)
	if err != nil {
		return time.Time{}, err
	}
	raise(&st.hwm, r.HWM)
	learnLeased(st, r)
	switch {
	case epoch < r.HWM:
		return time.Time{}, &StaleEpochError{Resource: resource, Presented: epoch, Current: r.HWM}
	case epoch > r.HWM:
		// The store holds less than this replica saw: only a store restored
		// from an old backup does that. Raise it back rather than admit on
		// the cache's word.
		h, err := f.advance(ctx, resource, epoch)
		raise(&st.hwm, h)
		if err != nil {
			return time.Time{}, err
		}
	}
	return f.deliverBy(resource, epoch, r)
}

// confirm is a coalesced linearizable read of resource's Mark that started
// after the call.
func (f *Fence) confirm(ctx context.Context, resource string) (markRead, error) {
	r, err := f.confirms.Do(ctx, resource)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return markRead{}, &UnavailableError{Op: "confirm", Resource: resource, Err: err}
		}
		return markRead{}, err
	}
	return r, nil
}

// afterAdvance decides on the lease of resource for a write at epoch that
// an advance of the store admitted, from the read r that followed it. The
// advance is the admission's linearization point, so r's HWM, which may
// have risen since, does not refuse it. On a resource leased when the
// advance ran, the advance changed nothing (no epoch passes the highest
// issued, and every grant raises the HWM to it), so a refusal by the lease
// is sound; r alone cannot tell whether a grant above epoch came before
// the advance or after it, and then the outcome is unknown: the write is
// not forwarded and the caller gets an *UnavailableError.
func (f *Fence) afterAdvance(resource string, epoch int64, r markRead) (time.Time, error) {
	if l := r.Lease; l.Leased() && l.Epoch > epoch {
		return time.Time{}, &UnavailableError{Op: "confirm", Resource: resource,
			Err: fmt.Errorf("a lease was granted at epoch %d while epoch %d was admitted; the write is not forwarded", l.Epoch, epoch)}
	}
	return f.deliverBy(resource, epoch, r)
}

// confirmRead is one coalesced confirmation: a linearizable read of the
// store, bounded by the store timeout. Callers that share it may give up
// earlier; it is cancelled only once all of them have.
func (f *Fence) confirmRead(ctx context.Context, resource string) (markRead, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	start := f.since()
	m, err := f.store.Mark(ctx, resource)
	return markRead{Mark: m, start: start}, err
}

// mark reads resource's Mark from the store, bounded by the store timeout.
func (f *Fence) mark(ctx context.Context, resource string) (markRead, error) {
	r, err := f.confirmRead(ctx, resource)
	if err != nil {
		return markRead{}, fmt.Errorf("read HWM and lease: %w", err)
	}
	return r, nil
}

// since is the time elapsed since the Fence was made, in nanoseconds on
// the monotonic clock; never 0.
func (f *Fence) since() int64 { return int64(time.Since(f.base)) + 1 }

// at is the moment since() reads t.
func (f *Fence) at(t int64) time.Time { return f.base.Add(time.Duration(t - 1)) }

// trusted is how long a grant the store says stays live for left is
// taken to stay live on this process's clock: left less ClockRateBound.
func trusted(left time.Duration) time.Duration {
	return left - time.Duration(float64(left)*ClockRateBound)
}

// Current returns resource's HWM: from memory over an exclusive store once
// loaded, otherwise from a linearizable store read.
func (f *Fence) Current(ctx context.Context, resource string) (int64, error) {
	if err := ValidateResource(resource); err != nil {
		return 0, err
	}
	st := f.cache.take(resource)
	defer f.cache.put(st)
	if f.exclusive {
		if st.ready.Load() {
			return st.hwm.Load(), nil
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if err := f.load(ctx, st, resource); err != nil {
			return 0, err
		}
		return st.hwm.Load(), nil
	}
	h, err := f.current(ctx, resource)
	if err == nil {
		raise(&st.hwm, h)
	}
	return h, err
}

// Cached returns the HWM this Fence holds in memory for resource, a lower
// bound of the store's; 0 when it holds none.
func (f *Fence) Cached(resource string) int64 {
	h, _ := f.cache.cachedHWM(resource)
	return h
}

func (f *Fence) current(ctx context.Context, resource string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	h, err := f.store.Current(ctx, resource)
	if err != nil {
		return 0, fmt.Errorf("read HWM: %w", err)
	}
	return h, nil
}

// advance raises the store's HWM. It returns the HWM it learned (0 when it
// learned none) and the store's verdict.
func (f *Fence) advance(ctx context.Context, resource string, epoch int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	h, err := f.store.Advance(ctx, resource, epoch)
	var stale *StaleEpochError
	if errors.As(err, &stale) {
		return stale.Current, stale
	}
	if err != nil {
		return 0, fmt.Errorf("advance HWM: %w", err)
	}
	return h, nil
}

// raise sets v to h if h is greater: the cached HWM never decreases.
func raise(v *atomic.Int64, h int64) {
	for {
		old := v.Load()
		if h <= old || v.CompareAndSwap(old, h) {
			return
		}
	}
}
