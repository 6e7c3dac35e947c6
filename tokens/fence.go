package tokens

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/internal/coalesce"
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
// Admission is linearizable whenever the store is. Errors from the store fail
// closed: the write is not admitted.
type Fence struct {
	store     Store
	exclusive bool
	timeout   time.Duration

	cache *hwmCache

	// confirms shares the linearizable reads that confirm an epoch equal
	// to a cached HWM over a shared store.
	confirms *coalesce.Group[int64]
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
// *StaleEpochError (epoch below the HWM), an error wrapping ErrInvalidEpoch
// or ErrInvalidResource, or a *UnavailableError (the store could not
// confirm; the write must not proceed).
func (f *Fence) Admit(ctx context.Context, resource string, epoch int64) error {
	if err := ValidateResource(resource); err != nil {
		return err
	}
	if err := ValidateEpoch(epoch); err != nil {
		return err
	}
	st := f.cache.take(resource)
	defer f.cache.put(st)
	if f.exclusive {
		return f.admitExclusive(ctx, st, resource, epoch)
	}
	return f.admitShared(ctx, st, resource, epoch)
}

func (f *Fence) admitExclusive(ctx context.Context, st *resourceState, resource string, epoch int64) error {
	if st.ready.Load() {
		h := st.hwm.Load()
		if epoch == h {
			return nil
		}
		if epoch < h {
			return &StaleEpochError{Resource: resource, Presented: epoch, Current: h}
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := f.load(ctx, st, resource); err != nil {
		return err
	}
	h := st.hwm.Load()
	if epoch < h {
		return &StaleEpochError{Resource: resource, Presented: epoch, Current: h}
	}
	if epoch == h {
		return nil
	}
	h, err := f.advance(ctx, resource, epoch)
	switch {
	case err == nil || h > 0: // admitted, or stale with the store's HWM
		st.hwm.Store(h)
	case !IsVerdict(err):
		// The outcome is unknown: the store may hold epoch now. Reload
		// before answering from memory again.
		st.ready.Store(false)
	}
	return err
}

// load fills st from an exclusive store once. The caller holds st.mu.
func (f *Fence) load(ctx context.Context, st *resourceState, resource string) error {
	if st.ready.Load() {
		return nil
	}
	h, err := f.current(ctx, resource)
	if err != nil {
		return err
	}
	st.hwm.Store(h)
	st.ready.Store(true)
	return nil
}

func (f *Fence) admitShared(ctx context.Context, st *resourceState, resource string, epoch int64) error {
	h := st.hwm.Load()
	if epoch < h {
		return &StaleEpochError{Resource: resource, Presented: epoch, Current: h}
	}
	if epoch > h {
		h, err := f.advance(ctx, resource, epoch)
		raise(&st.hwm, h)
		return err
	}
	h, err := f.confirms.Do(ctx, resource)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return &UnavailableError{Op: "confirm", Resource: resource, Err: err}
		}
		return err
	}
	raise(&st.hwm, h)
	switch {
	case epoch < h:
		return &StaleEpochError{Resource: resource, Presented: epoch, Current: h}
	case epoch == h:
		return nil
	default:
		// The store holds less than this replica saw: only a store restored
		// from an old backup does that. Raise it back rather than admit on
		// the cache's word.
		h, err := f.advance(ctx, resource, epoch)
		raise(&st.hwm, h)
		return err
	}
}

// confirmRead is one coalesced confirmation: a linearizable read of the
// store, bounded by the store timeout. Callers that share it may give up
// earlier; it is cancelled only once all of them have.
func (f *Fence) confirmRead(ctx context.Context, resource string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return f.store.Current(ctx, resource)
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
