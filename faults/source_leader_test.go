package faults

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// The epoch-source workload: leaders that take the lock or win the
// election in the source themselves, with connections of their own, and
// write through random replicas presenting their epoch; each term ends by a
// release or by a lapse, after which the leader sometimes writes on as a
// zombie whose clock stopped. Now and then a leader presents an epoch the
// source never gave out (a forger).

// sourceResources are the resources whose leaders a source that reads one
// lock or election per resource elects.
func sourceResources() []string { return []string{"src-0", "src-1"} }

// The holders' suffixes that mark a leader's writes outside its term.
const (
	zombieSuffix = "/zombie" // written after the term lapsed
	forgedSuffix = "/forged" // an epoch the source never gave out
)

// elector is one participant in an epoch source's elections, with a
// connection of its own. One goroutine calls its methods, in the order
// campaign, then renew any number of times, then resign or lapse.
type elector interface {
	// campaign tries to lead resource, bounded by a few seconds: the
	// epoch once it leads, or ok false when another leads or the source
	// did not answer.
	campaign(resource string) (epoch int64, ok bool)
	// renew extends the term; false when it no longer surely leads.
	renew() bool
	// resign ends the term cleanly (a release, a closed session). It
	// returns a moment by which the source surely no longer held the term,
	// or zero when it cannot tell.
	resign() time.Time
	// lapse ends the term as a leader whose process froze would: it stops
	// renewing (and heartbeating) until the source dropped the term, then
	// returns that moment (zero when it cannot tell) with the leader's
	// network back, so that it can write on as a zombie.
	lapse() time.Time
	// close releases the participant's connections.
	close()
}

// runSourced starts one leader per elector, electors[i] named holders[i];
// they stop when stop closes, and the returned function waits for them.
// ttl is the lease the electors keep (a lock's PX, a session's timeout).
func (w *workload) runSourced(seed uint64, holders []string, electors []elector, ttl time.Duration, stop <-chan struct{}) (wait func()) {
	var wg sync.WaitGroup
	for i, el := range electors {
		holder := holders[i]
		wg.Go(func() { w.sourceLeader(i, holder, el, ttl, rand.New(rand.NewPCG(seed, uint64(100+i))), stop) })
	}
	wg.Go(func() { w.prober(len(electors), rand.New(rand.NewPCG(seed, 99)), stop) })
	return wg.Wait
}

// proberHolder names the prober's writes.
const proberHolder = "prober"

// prober writes every 50 ms, through the replicas in turn, at the latest
// epoch any leader took on a random resource, whether that term still
// holds or not: writes go on through every replica while the leaders
// cannot reach the source (and stop writing), so that a fault that cuts a
// replica from the source meets writes there.
func (w *workload) prober(id int, rng *rand.Rand, stop <-chan struct{}) {
	for r := 0; !closed(stop); r = (r + 1) % len(w.c.gateways) {
		res := w.c.source.resources[rng.IntN(len(w.c.source.resources))]
		if epoch, ok := w.latestTerm(res); ok {
			e := strconv.FormatInt(epoch, 10)
			w.write(id, r, OpSourced, res, epoch, e, proberHolder, "", "probe")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sourceLeader campaigns on a random resource of the cluster's source, leads for one to three
// ttls, then resigns or lets its term lapse and writes on as a zombie
// (always after its first term, so that every run has zombies; then at
// random), records the term, and starts over.
func (w *workload) sourceLeader(id int, holder string, el elector, ttl time.Duration, rng *rand.Rand, stop <-chan struct{}) {
	defer el.close()
	for first := true; !closed(stop); {
		res := w.c.source.resources[rng.IntN(len(w.c.source.resources))]
		call := time.Now()
		epoch, ok := el.campaign(res)
		if !ok {
			time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
			continue
		}
		tm := Term{Resource: res, Holder: holder, Epoch: epoch, Call: call, Acquired: time.Now()}
		w.tookTerm(res, epoch)
		w.lead(id, el, tm, ttl, rng, stop)
		if closed(stop) || (!first && rng.IntN(2) == 0) {
			tm.Lost = el.resign()
		} else {
			tm.Lost, tm.Lapsed = el.lapse(), true
			for range 3 {
				w.sourcedWrite(id, rng, tm, holder+zombieSuffix, epoch)
			}
		}
		first = false
		w.addTerm(tm)
		time.Sleep(time.Duration(200+rng.IntN(400)) * time.Millisecond)
	}
}

// lead writes through random replicas at tm's epoch and renews every third
// of ttl, until its term of one to three ttls is over, a renewal fails or
// is late, or a write is refused as stale; one write in fifteen presents a
// forged epoch.
func (w *workload) lead(id int, el elector, tm Term, ttl time.Duration, rng *rand.Rand, stop <-chan struct{}) {
	renewed := tm.Acquired
	for end := time.Now().Add(time.Duration(1+rng.IntN(3)) * ttl); time.Now().Before(end) && !closed(stop); {
		if time.Since(renewed) > ttl/3 {
			if !el.renew() {
				return
			}
			renewed = time.Now()
		}
		if time.Since(renewed) > ttl/2 {
			return // not renewed in time: no longer sure to lead
		}
		if rng.IntN(15) == 0 {
			w.sourcedWrite(id, rng, tm, tm.Holder+forgedSuffix, tm.Epoch+1000)
			continue
		}
		op := w.sourcedWrite(id, rng, tm, tm.Holder, tm.Epoch)
		if op.Outcome == OutcomeStale || op.Outcome == OutcomeSuperseded || op.Outcome == OutcomeCut {
			return
		}
		time.Sleep(time.Duration(20+rng.IntN(40)) * time.Millisecond)
	}
}

// sourcedWrite writes at epoch on tm's resource through a random replica.
func (w *workload) sourcedWrite(id int, rng *rand.Rand, tm Term, holder string, epoch int64) Op {
	e := strconv.FormatInt(epoch, 10)
	return w.write(id, rng.IntN(len(w.c.gateways)), OpSourced, tm.Resource, epoch, e, holder, "", "lead "+holder)
}

func closed(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
