package tokens

import "context"

// Acquire grants a lease through the store (see LeaseStore.Acquire) and
// brings the Fence's cache of resource name up to the grant's epoch, so a
// holder fenced by the grant is refused from memory at once. A refusal
// (IsVerdict) leaves the cache as it was; any other error leaves the
// outcome unknown, and over an exclusive store the cache of name is then
// reloaded from the store before it answers again.
func (f *Fence) Acquire(ctx context.Context, name, holder string, t Terms, by Caller) (Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	st := f.cache.take(name)
	defer f.cache.put(st)
	if !f.exclusive {
		g, err := f.store.Acquire(ctx, name, holder, t, by)
		if err == nil {
			st.leased.Store(true)
			raise(&st.hwm, g.Epoch)
		}
		return g, err
	}
	// Over an exclusive store the cache must stay exact: hold the
	// resource's lock across the grant, as Admit does across an advance,
	// and mark the cache unready first. The grant is visible in the store
	// (a lease read, a fence read) the moment it commits; from then until
	// the cache holds its epoch, admissions must wait on the lock rather
	// than answer from memory at the old epoch.
	st.mu.Lock()
	defer st.mu.Unlock()
	wasReady := st.ready.Load()
	st.ready.Store(false)
	start := f.since()
	g, err := f.store.Acquire(ctx, name, holder, t, by)
	switch {
	case err == nil:
		// The lease before the HWM: a write that reads the new HWM from
		// memory (without the lock) then reads the lease too.
		f.keepLease(st, markRead{Mark: Mark{HWM: g.Epoch, Lease: LeaseLife{Epoch: g.Epoch, Left: g.TTL}}, start: start})
		st.hwm.Store(g.Epoch)
		st.ready.Store(true)
	case IsVerdict(err):
		st.ready.Store(wasReady) // nothing changed
	}
	// Otherwise the outcome is unknown: reload from the store next time.
	return g, err
}

// Renew renews a lease through the store; see LeaseStore.Renew. Over an
// exclusive store the cached life of the grant is extended with it.
func (f *Fence) Renew(ctx context.Context, name, holder string, epoch int64, by Caller) (Lease, error) {
	return changeLease(f, ctx, name, func(ctx context.Context) (Lease, error) {
		return f.store.Renew(ctx, name, holder, epoch, by)
	}, func(st *resourceState, start int64, l Lease) {
		if st.leaseEpoch.Load() == epoch {
			st.leaseUntil.Store(max(st.leaseUntil.Load(), start+int64(trusted(l.TTL))))
		}
	})
}

// Release releases a lease through the store; see LeaseStore.Release.
// Over an exclusive store, writes at the released grant's epoch are
// refused from memory from then on, as released only when the grant was
// known live when the store released it: a release after the lapse leaves
// it lapsed (and its lock-delay running), and when the cached deadline
// passed the store is read again to say which.
func (f *Fence) Release(ctx context.Context, name, holder string, epoch int64, by Caller) error {
	_, err := changeLease(f, ctx, name, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, f.store.Release(ctx, name, holder, epoch, by)
	}, func(st *resourceState, _ int64, _ struct{}) {
		if st.leaseEpoch.Load() != epoch {
			return
		}
		// until is a lower bound of the store's deadline: still ahead
		// now, the grant was live when the store released it.
		switch until := st.leaseUntil.Load(); {
		case f.since() < until:
			st.released.Store(true)
		case until > 0:
			st.ready.Store(false)
		}
		st.leaseUntil.Store(0)
	})
	return err
}

// changeLease makes a renewal or release through the store (change) with
// ctx bounded by the Fence's timeout. Over an exclusive store it holds
// name's cache locked across the change and then brings the cache up to
// its outcome (see afterLeaseChange), done getting the time the change
// began and what it returned.
func changeLease[T any](f *Fence, ctx context.Context, name string, change func(context.Context) (T, error), done func(st *resourceState, start int64, v T)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if !f.exclusive {
		return change(ctx)
	}
	st := f.cache.take(name)
	defer f.cache.put(st)
	st.mu.Lock()
	defer st.mu.Unlock()
	start := f.since()
	v, err := change(ctx)
	f.afterLeaseChange(st, err, func() { done(st, start, v) })
	return v, err
}

// afterLeaseChange brings the cached lease of st up to a renewal or
// release over an exclusive store that returned err: done when it
// succeeded, nothing after a verdict (nothing changed), and a reload from
// the store when the outcome is unknown. The caller holds st.mu.
func (f *Fence) afterLeaseChange(st *resourceState, err error, done func()) {
	switch {
	case !st.ready.Load():
	case err == nil:
		done()
	case !IsVerdict(err):
		st.ready.Store(false)
	}
}

// Lease reads a lease through the store; see LeaseStore.Lease.
func (f *Fence) Lease(ctx context.Context, name string) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return f.store.Lease(ctx, name)
}
