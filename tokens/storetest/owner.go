package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// The callers of the ownership cases: two keys allowed the same leases and
// an admin.
var (
	keyOne = tokens.Caller{Name: "key-one"}
	keyTwo = tokens.Caller{Name: "key-two"}
	admin  = tokens.Caller{Name: "ops", Admin: true}
)

// mustBeOwned fails the test unless err is a *LeaseOwnedError naming owner
// and the refused caller.
func mustBeOwned(t *testing.T, err error, name, owner string, by tokens.Caller) {
	t.Helper()
	var owned *tokens.LeaseOwnedError
	if !errors.As(err, &owned) || owned.Name != name || owned.Owner != owner || owned.Caller != by.Name || owned.Op == "" {
		t.Fatalf("got %v, want *LeaseOwnedError of %q owned by %q refusing %q", err, name, owner, by.Name)
	}
}

// mustLease reads a lease and checks its holder, epoch, owner and liveness.
func mustLease(t *testing.T, s tokens.Store, name, holder string, epoch int64, owner string, held bool) tokens.Lease {
	t.Helper()
	l, err := s.Lease(ctx(t), name)
	if err != nil || l.Holder != holder || l.Epoch != epoch || l.Owner != owner || l.Held != held {
		t.Fatalf("Lease(%q) = %+v, %v; want %q at epoch %d owned by %q, held %v", name, l, err, holder, epoch, owner, held)
	}
	return l
}

func testOwnerRecorded(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquireBy(t, s, "owned", "node-a", 15*time.Second, keyOne)
	mustLease(t, s, "owned", "node-a", g.Epoch, keyOne.Name, true)
	l, err := s.Renew(ctx(t), "owned", "node-a", g.Epoch, keyOne)
	if err != nil || l.Owner != keyOne.Name {
		t.Fatalf("owner's renew = %+v, %v", l, err)
	}
	again := mustAcquireBy(t, s, "owned", "node-a", 15*time.Second, keyOne)
	if again.Epoch != g.Epoch+1 || again.Previous == nil || again.Previous.Owner != keyOne.Name {
		t.Fatalf("owner's re-acquire = %+v previous %+v", again.Lease, again.Previous)
	}
	un := mustAcquire(t, s, "unowned", "node-a", 15*time.Second)
	mustLease(t, s, "unowned", "node-a", un.Epoch, "", true)
}

func testRenewOwned(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquireBy(t, s, "lease", "node-a", 15*time.Second, keyOne)
	for _, by := range []tokens.Caller{keyTwo, anon} {
		_, err := s.Renew(ctx(t), "lease", "node-a", g.Epoch, by)
		mustBeOwned(t, err, "lease", keyOne.Name, by)
	}
	// A renewal naming another grant is lost, whoever asks.
	_, err := s.Renew(ctx(t), "lease", "node-a", g.Epoch+1, keyTwo)
	MustBeLost(t, err)
	_, err = s.Renew(ctx(t), "lease", "node-b", g.Epoch, keyTwo)
	MustBeLost(t, err)
	// The owner's retried renew is as safe as one; an admin's renew keeps
	// the owner.
	for i, by := range []tokens.Caller{keyOne, keyOne, admin} {
		l, err := s.Renew(ctx(t), "lease", "node-a", g.Epoch, by)
		if err != nil || l.Epoch != g.Epoch || l.Owner != keyOne.Name || !l.Held {
			t.Fatalf("renew %d by %+v = %+v, %v", i, by, l, err)
		}
	}
	mustLease(t, s, "lease", "node-a", g.Epoch, keyOne.Name, true)
	mustCurrent(t, s, "lease", g.Epoch)
}

func testReleaseOwned(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquireBy(t, s, "lease", "node-a", 15*time.Second, keyOne)
	mustBeOwned(t, s.Release(ctx(t), "lease", "node-a", g.Epoch, keyTwo), "lease", keyOne.Name, keyTwo)
	mustBeOwned(t, s.Release(ctx(t), "lease", "node-a", g.Epoch, anon), "lease", keyOne.Name, anon)
	MustBeLost(t, s.Release(ctx(t), "lease", "node-a", g.Epoch+1, keyTwo))
	mustLease(t, s, "lease", "node-a", g.Epoch, keyOne.Name, true)
	for i := 0; i < 2; i++ { // the owner's retried release is as safe as one
		if err := s.Release(ctx(t), "lease", "node-a", g.Epoch, keyOne); err != nil {
			t.Fatalf("owner's release %d: %v", i, err)
		}
	}
	// Released, the grant is still key one's: key two cannot release it
	// again, but may take the free lease over.
	mustBeOwned(t, s.Release(ctx(t), "lease", "node-a", g.Epoch, keyTwo), "lease", keyOne.Name, keyTwo)
	b := mustAcquireBy(t, s, "lease", "node-a", 15*time.Second, keyTwo)
	if b.Epoch != g.Epoch+1 || b.Previous == nil || b.Previous.Owner != keyOne.Name {
		t.Fatalf("takeover of the released lease = %+v previous %+v", b.Lease, b.Previous)
	}
	MustBeLost(t, s.Release(ctx(t), "lease", "node-a", g.Epoch, keyOne))
	// An admin may release any owner's grant.
	if err := s.Release(ctx(t), "lease", "node-a", b.Epoch, admin); err != nil {
		t.Fatalf("admin's release: %v", err)
	}
	mustLease(t, s, "lease", "node-a", b.Epoch, keyTwo.Name, false)
}

func testAcquireOwned(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquireBy(t, s, "lease", "node-a", 15*time.Second, keyOne)
	// Naming the live holder does not make another key its owner.
	for _, by := range []tokens.Caller{keyTwo, anon} {
		_, err := s.Acquire(ctx(t), "lease", "node-a", tokens.Terms{TTL: 15 * time.Second}, by)
		mustBeOwned(t, err, "lease", keyOne.Name, by)
	}
	// Another holder is held off as ever.
	_, err := s.Acquire(ctx(t), "lease", "node-b", tokens.Terms{TTL: 15 * time.Second}, keyTwo)
	MustBeHeld(t, err, "node-a", g.Epoch)
	mustLease(t, s, "lease", "node-a", g.Epoch, keyOne.Name, true)
	mustCurrent(t, s, "lease", g.Epoch)
	// An admin may re-grant it; the grant is then the admin's.
	a := mustAcquireBy(t, s, "lease", "node-a", 15*time.Second, admin)
	if a.Epoch != g.Epoch+1 || a.Previous == nil || a.Previous.Owner != keyOne.Name {
		t.Fatalf("admin's re-acquire = %+v previous %+v", a.Lease, a.Previous)
	}
	_, err = s.Acquire(ctx(t), "lease", "node-a", tokens.Terms{TTL: 15 * time.Second}, keyOne)
	mustBeOwned(t, err, "lease", admin.Name, keyOne)
	_, err = s.Renew(ctx(t), "lease", "node-a", g.Epoch, keyOne)
	MustBeLost(t, err)
	mustCurrent(t, s, "lease", a.Epoch)
}

// testOwnedTakeover: once a grant lapses, any caller may take the lease
// over, even naming the same holder, and the old owner's renewal is lost.
func testOwnedTakeover(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquireBy(t, s, "sweeper", "node-a", shortTTL(s), keyOne)
	b := acquireWhenExpiredBy(t, s, "sweeper", "node-a", 15*time.Second, keyTwo)
	if b.Epoch != g.Epoch+1 || b.Owner != keyTwo.Name || b.Previous == nil || b.Previous.Owner != keyOne.Name {
		t.Fatalf("takeover = %+v previous %+v", b.Lease, b.Previous)
	}
	_, err := s.Renew(ctx(t), "sweeper", "node-a", g.Epoch, keyOne)
	MustBeLost(t, err)
	_, err = s.Renew(ctx(t), "sweeper", "node-a", b.Epoch, keyOne)
	mustBeOwned(t, err, "sweeper", keyTwo.Name, keyOne)
	mustBeStale(t, s, "sweeper", g.Epoch, b.Epoch)
}

// testUnownedLeases: a grant made by the anonymous caller (no api_keys) is
// anyone's to renew, release and re-acquire, as before owners existed; a
// named caller's re-acquire makes the new grant its own.
func testUnownedLeases(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	for _, by := range []tokens.Caller{anon, keyOne, keyTwo, admin} {
		if l, err := s.Renew(ctx(t), "lease", "node-a", g.Epoch, by); err != nil || l.Owner != "" {
			t.Fatalf("renew of an unowned lease by %+v = %+v, %v", by, l, err)
		}
	}
	if err := s.Release(ctx(t), "lease", "node-a", g.Epoch, keyTwo); err != nil {
		t.Fatalf("release of an unowned lease by key two: %v", err)
	}
	h := mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	k := mustAcquireBy(t, s, "lease", "node-a", 15*time.Second, keyOne)
	if k.Epoch != h.Epoch+1 {
		t.Fatalf("re-acquire of an unowned lease = epoch %d, want %d", k.Epoch, h.Epoch+1)
	}
	_, err := s.Renew(ctx(t), "lease", "node-a", k.Epoch, anon)
	mustBeOwned(t, err, "lease", keyOne.Name, anon)
}

// testOwnerDurable: the owner is part of the stored grant, seen after a
// restart and by every client of a shared store.
func testOwnerDurable(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquireBy(t, s, "durable-owner", "node-a", 30*time.Second, keyOne)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := f(t)
	mustLease(t, s2, "durable-owner", "node-a", g.Epoch, keyOne.Name, true)
	_, err := s2.Renew(ctx(t), "durable-owner", "node-a", g.Epoch, keyTwo)
	mustBeOwned(t, err, "durable-owner", keyOne.Name, keyTwo)
	if _, err := s2.Renew(ctx(t), "durable-owner", "node-a", g.Epoch, keyOne); err != nil {
		t.Fatalf("owner's renew after restart: %v", err)
	}
	if s2.Exclusive() {
		return
	}
	s3 := f(t)
	mustBeOwned(t, s3.Release(ctx(t), "durable-owner", "node-a", g.Epoch, keyTwo), "durable-owner", keyOne.Name, keyTwo)
	_, err = s3.Acquire(ctx(t), "durable-owner", "node-a", tokens.Terms{TTL: 15 * time.Second}, keyTwo)
	mustBeOwned(t, err, "durable-owner", keyOne.Name, keyTwo)
	if _, err := s3.Renew(ctx(t), "durable-owner", "node-a", g.Epoch, keyOne); err != nil {
		t.Fatalf("owner's renew through another client: %v", err)
	}
	mustLease(t, s2, "durable-owner", "node-a", g.Epoch, keyOne.Name, true)
}

func testInvalidCaller(t *testing.T, f Factory) {
	s := f(t)
	for _, by := range []tokens.Caller{{Name: "a\x00b"}, {Name: "a\nb"}, {Name: "\xff"}, {Name: string(make([]byte, tokens.MaxOwnerLen+1))}} {
		if _, err := s.Acquire(ctx(t), "l", "a", tokens.Terms{TTL: time.Second}, by); !errors.Is(err, tokens.ErrInvalidLease) {
			t.Fatalf("Acquire by %q = %v, want ErrInvalidLease", by.Name, err)
		}
		if _, err := s.Renew(ctx(t), "l", "a", 1, by); !errors.Is(err, tokens.ErrInvalidLease) {
			t.Fatalf("Renew by %q = %v, want ErrInvalidLease", by.Name, err)
		}
		if err := s.Release(ctx(t), "l", "a", 1, by); !errors.Is(err, tokens.ErrInvalidLease) {
			t.Fatalf("Release by %q = %v, want ErrInvalidLease", by.Name, err)
		}
	}
	if _, err := s.Lease(ctx(t), "l"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("refused requests created the lease: %v", err)
	}
	mustAcquireBy(t, s, "l", "a", shortTTL(s), tokens.Caller{Name: "team a (ci)"})
}
