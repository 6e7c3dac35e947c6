package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencegw/fencegw/wire"
)

// The workload: raw writers racing epochs on a few resources, some writes
// with an Idempotency-Key (retried with the same key when their outcome is
// unknown), readers of the fence, and leaders that acquire, renew, write
// with their signed token and release or let their lease lapse — and,
// sometimes, write on with their old token after their term ended, as a
// leader whose clock stopped would.

// leaseName is the leaders' lease, and the resource of the signed route.
const leaseName = "lease-1"

// rawResources are the raw writers' resources.
var rawResources = []string{"raw-0", "raw-1"}

// workload drives clients against a cluster and records what they saw.
type workload struct {
	c      *cluster
	client *http.Client
	mu     sync.Mutex
	ops    []Op
	terms  []Term // leaders' terms in an epoch source
	// latest is, per resource, the epoch of the latest term a leader
	// took in an epoch source (the prober presents it).
	latest map[string]int64
	n      int // ops issued, for ids
}

func newWorkload(c *cluster) *workload {
	return &workload{c: c, client: &http.Client{Timeout: 3 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16, ResponseHeaderTimeout: 3 * time.Second}}}
}

func (w *workload) nextID(prefix string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fmt.Sprintf("%s-%d", prefix, w.n)
}

func (w *workload) record(op Op) {
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
}

// tookTerm notes that a leader took epoch on resource in an epoch source.
func (w *workload) tookTerm(resource string, epoch int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.latest == nil {
		w.latest = map[string]int64{}
	}
	w.latest[resource] = max(w.latest[resource], epoch)
}

// latestTerm is the epoch of the latest term taken on resource; ok is
// false when none was (0 is an epoch: a Kubernetes Lease's first).
func (w *workload) latestTerm(resource string) (epoch int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	epoch, ok = w.latest[resource]
	return epoch, ok
}

// addTerm records a leader's term in an epoch source.
func (w *workload) addTerm(tm Term) {
	w.mu.Lock()
	w.terms = append(w.terms, tm)
	w.mu.Unlock()
}

func (w *workload) termsSoFar() []Term {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Term(nil), w.terms...)
}

func (w *workload) history() []Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Op(nil), w.ops...)
}

// run starts clients raw writers and the leaders; they stop when stop
// closes, and run returns a function that waits for them.
func (w *workload) run(seed uint64, clients int, stop <-chan struct{}) (wait func()) {
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Go(func() { w.rawClient(i, rand.New(rand.NewPCG(seed, uint64(i))), stop) })
	}
	for i, holder := range []string{"node-a", "node-b"} {
		id := clients + i
		wg.Go(func() { w.leader(id, holder, rand.New(rand.NewPCG(seed, uint64(id))), stop) })
	}
	return wg.Wait
}

// rawClient writes epochs near the highest it has seen, reads the fence
// now and then, and puts a key on a quarter of its writes.
func (w *workload) rawClient(id int, rng *rand.Rand, stop <-chan struct{}) {
	seen := map[string]int64{}
	for {
		select {
		case <-stop:
			return
		default:
		}
		res := rawResources[rng.IntN(len(rawResources))]
		r := rng.IntN(len(w.c.gateways))
		if rng.IntN(6) == 0 {
			if v, ok := w.read(id, r, res); ok {
				seen[res] = max(seen[res], v)
			}
			continue
		}
		epoch := max(1, seen[res]+int64(rng.IntN(4))-1)
		key := ""
		if rng.IntN(4) == 0 {
			key = fmt.Sprintf("k-%d-%d", id, rng.Uint64())
		}
		body := fmt.Sprintf("write %d of %s", epoch, key)
		op := w.write(id, r, OpWrite, res, epoch, strconv.FormatInt(epoch, 10), "", key, body)
		seen[res] = max(seen[res], op.Current)
		if op.Outcome == OutcomeAdmitted || op.Outcome == OutcomeReplayed {
			seen[res] = max(seen[res], epoch)
		}
		if key != "" && op.Outcome == OutcomeUnknown {
			// A client retries a write of unknown outcome with its key:
			// it must not be forwarded twice.
			w.write(id, rng.IntN(len(w.c.gateways)), OpWrite, res, epoch, strconv.FormatInt(epoch, 10), "", key, body)
		}
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
	}
}

// write sends one write through replica r and records it.
func (w *workload) write(client, r int, kind OpKind, res string, epoch int64, token, holder, key, body string) Op {
	path := "/raw/op"
	switch kind {
	case OpSigned:
		path = "/w/op"
	case OpSourced:
		path = "/src/" + res + "/op"
	}
	op := Op{ID: w.nextID("w"), Client: client, Replica: r, Kind: kind, Resource: res, Epoch: epoch, Key: key,
		Holder: holder, Call: time.Now()}
	req, _ := http.NewRequest(http.MethodPost, w.c.gateways[r].proxyURL()+path, strings.NewReader(body))
	req.Header.Set("Fencing-Token", token)
	req.Header.Set("X-Resource", res)
	req.Header.Set("X-Op", op.ID)
	req.Header.Set("X-Replica", strconv.Itoa(r))
	req.Header.Set("X-Holder", holder)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := w.client.Do(req)
	op.Outcome, op.Current = outcomeOf(resp, err)
	op.Return = time.Now()
	w.record(op)
	return op
}

// outcomeOf classifies a write's answer.
func outcomeOf(resp *http.Response, err error) (Outcome, int64) {
	if err != nil {
		return OutcomeUnknown, 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return OutcomeUnknown, 0
	}
	var p struct {
		Type    string     `json:"type"`
		Detail  string     `json:"detail"`
		Current wire.Epoch `json:"current_epoch"`
	}
	json.Unmarshal(body, &p)
	switch {
	case resp.StatusCode < 300 && resp.Header.Get("Idempotent-Replayed") == "true":
		return OutcomeReplayed, 0
	case resp.StatusCode < 300:
		return OutcomeAdmitted, 0
	case resp.StatusCode == http.StatusPreconditionFailed && strings.Contains(p.Detail, "upstream connection was cut"):
		return OutcomeCut, 0 // the lease ran out mid-delivery (see the gateway's writeLapsed)
	case resp.StatusCode == http.StatusPreconditionFailed && p.Type == "urn:fencegw:problem:superseded":
		return OutcomeSuperseded, 0
	case resp.StatusCode == http.StatusPreconditionFailed:
		return OutcomeStale, int64(p.Current)
	case resp.StatusCode == http.StatusConflict && strings.HasPrefix(p.Type, "urn:fencegw:problem:idempotency-"):
		return OutcomeHeld, 0
	case resp.StatusCode == http.StatusServiceUnavailable:
		return OutcomeUnavailable, 0
	case resp.StatusCode >= 500:
		return OutcomeUnknown, 0
	}
	return OutcomeRefused, 0
}

// read reads resource's fence through replica r and records it.
func (w *workload) read(client, r int, res string) (int64, bool) {
	op := Op{ID: w.nextID("r"), Client: client, Replica: r, Kind: OpRead, Resource: res, Call: time.Now()}
	resp, err := w.client.Get(w.c.gateways[r].apiURL() + "/v1/fences/" + res)
	var st struct {
		Epoch wire.Epoch `json:"epoch"`
	}
	ok := err == nil && resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil
	if err == nil {
		resp.Body.Close()
	}
	op.Return = time.Now()
	if !ok {
		return 0, false // a failed read says nothing
	}
	op.Outcome, op.Current = OutcomeValue, int64(st.Epoch)
	w.record(op)
	return int64(st.Epoch), true
}

// leader campaigns for the lease through a random replica, and while it
// leads writes through random replicas with its token and renews; it ends
// its term by a release or by letting the lease lapse, and now and then
// writes on with the old token.
func (w *workload) leader(id int, holder string, rng *rand.Rand, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		r := rng.IntN(len(w.c.gateways))
		epoch, token, ok := w.acquire(r, holder)
		if !ok {
			time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
			continue
		}
		renewed := time.Now()
		term := time.Duration(1+rng.IntN(3)) * leaseTTL
		for end := time.Now().Add(term); time.Now().Before(end); {
			select {
			case <-stop:
				return
			default:
			}
			if time.Since(renewed) > leaseTTL/3 {
				if !w.renew(rng.IntN(len(w.c.gateways)), holder, epoch) {
					break
				}
				renewed = time.Now()
			}
			if time.Since(renewed) > leaseTTL/2 {
				break // not renewed in time: no longer sure to lead
			}
			op := w.write(id, rng.IntN(len(w.c.gateways)), OpSigned, leaseName, epoch, token, holder, "", "lead "+holder)
			if op.Outcome == OutcomeStale || op.Outcome == OutcomeSuperseded || op.Outcome == OutcomeCut {
				break
			}
			time.Sleep(time.Duration(20+rng.IntN(40)) * time.Millisecond)
		}
		if rng.IntN(2) == 0 {
			w.release(rng.IntN(len(w.c.gateways)), holder, epoch)
		} else if rng.IntN(2) == 0 {
			// A leader whose clock stopped: it believes it still leads.
			time.Sleep(leaseTTL)
			for range 3 {
				w.write(id, rng.IntN(len(w.c.gateways)), OpSigned, leaseName, epoch, token, holder, "", "zombie "+holder)
			}
		}
		// Leave the others (the slow-clock leader process too) a chance.
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
	}
}

// acquire asks replica r for the lease and returns its epoch and token.
func (w *workload) acquire(r int, holder string) (int64, string, bool) {
	body := fmt.Sprintf(`{"holder":%q,"ttl_seconds":%g}`, holder, leaseTTL.Seconds())
	resp, err := w.client.Post(w.c.gateways[r].apiURL()+"/v1/leases/"+leaseName+"/acquire", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", false
	}
	defer resp.Body.Close()
	var l struct {
		Epoch wire.Epoch `json:"epoch"`
		Token string     `json:"token"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&l) != nil || l.Token == "" {
		return 0, "", false
	}
	return int64(l.Epoch), l.Token, true
}

func (w *workload) renew(r int, holder string, epoch int64) bool {
	return w.leaseCall(r, "renew", holder, epoch) == http.StatusOK
}

func (w *workload) release(r int, holder string, epoch int64) {
	w.leaseCall(r, "release", holder, epoch)
}

func (w *workload) leaseCall(r int, op, holder string, epoch int64) int {
	body := fmt.Sprintf(`{"holder":%q,"epoch":%d}`, holder, epoch)
	resp, err := w.client.Post(w.c.gateways[r].apiURL()+"/v1/leases/"+leaseName+"/"+op, "application/json", strings.NewReader(body))
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
