package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/anishathalye/porcupine"

	"github.com/fencegw/fencegw/faults"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// The fence, as porcupine sees it: faults.FenceModel, a max register per
// resource.
type (
	fenceInput  = faults.FenceInput
	fenceOutput = faults.FenceOutput
)

var fenceModel = faults.FenceModel

// history records operations with their call and return times.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// writes maps an op id to the outcome the client saw.
	writes map[string]fenceOutput
	epochs map[string]int64
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(client int, in fenceInput, out fenceOutput, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
}

// runClients drives concurrent clients through the replicas and returns the
// recorded history. Each client sends writes with epochs near the highest it
// has seen, so admissions, equal-epoch admissions and stale writes all occur,
// and reads of the fence through the control API.
func runClients(t *testing.T, replicas []*gw, up *recordingUpstream, clients, opsEach int, during func(i int)) *history {
	h := &history{start: time.Now(), writes: map[string]fenceOutput{}, epochs: map[string]int64{}}
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 99))
			seen := map[string]int64{}
			for i := 0; i < opsEach; i++ {
				if c == 0 && during != nil {
					during(i)
				}
				res := fmt.Sprintf("lin-%d", rng.IntN(2))
				g := replicas[rng.IntN(len(replicas))]
				if rng.IntN(5) == 0 {
					call := h.now()
					v, ok := readFence(client, g, res)
					ret := h.now()
					if ok {
						h.add(c, fenceInput{Resource: res, Read: true}, fenceOutput{Outcome: "value", Current: v}, call, ret)
						seen[res] = max(seen[res], v)
					}
					continue
				}
				e := max(1, seen[res]+int64(rng.IntN(4))-1)
				id := fmt.Sprintf("%d-%d", c, i)
				call := h.now()
				out := writeFence(client, g, res, e, id)
				ret := h.now()
				if out.Outcome == "unknown" || out.Outcome == "unavailable" {
					ret = math.MaxInt64 // it may take effect at any time after its call
				}
				h.add(c, fenceInput{Resource: res, Epoch: e}, out, call, ret)
				h.mu.Lock()
				h.writes[id], h.epochs[id] = out, e
				h.mu.Unlock()
				seen[res] = max(seen[res], e, out.Current)
			}
		}(c)
	}
	wg.Wait()
	return h
}

func writeFence(c *http.Client, g *gw, res string, epoch int64, id string) fenceOutput {
	req, _ := http.NewRequest("POST", g.proxy.URL+"/any/op", strings.NewReader(id))
	req.Header.Set(gateway.TokenHeader, strconv.FormatInt(epoch, 10))
	req.Header.Set(gateway.ResourceHeader, res)
	req.Header.Set("X-Op", id)
	resp, err := c.Do(req)
	if err != nil {
		return fenceOutput{Outcome: "unknown"}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusCreated:
		return fenceOutput{Outcome: "admitted"}
	case http.StatusPreconditionFailed:
		var p struct {
			Type    string     `json:"type"`
			Current wire.Epoch `json:"current_epoch"`
		}
		json.Unmarshal(body, &p)
		if p.Type == problem.TypeSuperseded {
			// Admitted (the HWM may have moved), then not forwarded.
			return fenceOutput{Outcome: "superseded"}
		}
		return fenceOutput{Outcome: "stale", Current: int64(p.Current)}
	case http.StatusServiceUnavailable:
		// The store could not confirm: the HWM may or may not have moved,
		// but the write must not have been forwarded.
		return fenceOutput{Outcome: "unavailable"}
	default:
		return fenceOutput{Outcome: "unknown"}
	}
}

func readFence(c *http.Client, g *gw, res string) (int64, bool) {
	resp, err := c.Get(g.api.URL + "/v1/fences/" + url.PathEscape(res))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var st wire.FenceState
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return 0, false
	}
	return int64(st.Epoch), true
}

// recordingUpstream records the epoch each operation reached it with.
type recordingUpstream struct {
	*testUpstream
	mu   sync.Mutex
	seen map[string][]string // op id -> Fencing-Epoch values received
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	u := &recordingUpstream{seen: map[string][]string{}}
	u.testUpstream = &testUpstream{}
	u.testUpstream.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		id := r.Header.Get("X-Op")
		u.seen[id] = append(u.seen[id], r.Header.Get(gateway.EpochHeader))
		u.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(u.testUpstream.srv.Close)
	return u
}

// check runs porcupine over h and checks what reached the upstream: every
// admitted write once with its epoch, no refused write at all.
func check(t *testing.T, h *history, up *recordingUpstream) {
	t.Helper()
	counts := map[faults.Outcome]int{}
	for _, out := range h.writes {
		counts[out.Outcome]++
	}
	t.Logf("%d operations: %v", len(h.ops), counts)
	if counts["admitted"] == 0 || counts["stale"] == 0 {
		t.Fatalf("history exercises too little: %v", counts)
	}
	res, info := porcupine.CheckOperationsVerbose(fenceModel.ToModel(), h.ops, 2*time.Minute)
	if res != porcupine.Ok {
		path := t.TempDir() + "/history.html"
		if err := porcupine.VisualizePath(fenceModel.ToModel(), info, path); err == nil {
			t.Logf("visualization: %s", path)
		}
		t.Fatalf("history is not linearizable: %s", res)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	for id, out := range h.writes {
		got := up.seen[id]
		want := strconv.FormatInt(h.epochs[id], 10)
		switch out.Outcome {
		case "admitted":
			if len(got) != 1 || got[0] != want {
				t.Errorf("admitted write %s reached the upstream as %v, want once with epoch %s", id, got, want)
			}
		case "stale", "unavailable", "superseded":
			if len(got) != 0 {
				t.Errorf("%s write %s reached the upstream %v", out.Outcome, id, got)
			}
		}
	}
}

// TestLinearizableAcrossReplicas proves the fence is one fence: three
// gateway replicas, each with its own store client and cache, concurrent
// clients, a recorded history checked against the max-register model.
func TestLinearizableAcrossReplicas(t *testing.T) {
	cases := []struct {
		name     string
		replicas func(t *testing.T) []storetest.Factory
	}{
		{"embedded-1-replica", func(t *testing.T) []storetest.Factory { return []storetest.Factory{boltFresh(t)} }},
		{"postgres-3-replicas", func(t *testing.T) []storetest.Factory {
			f := pgFresh(t)
			return []storetest.Factory{f, f, f}
		}},
		{"etcd-3-members-3-replicas", func(t *testing.T) []storetest.Factory {
			c := testetcd.Start(t, 3)
			prefix := uniquePrefix()
			var fs []storetest.Factory
			for _, ep := range c.Endpoints() {
				fs = append(fs, etcdFactory([]string{ep}, prefix)) // each replica talks to its own member
			}
			return fs
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && !strings.HasPrefix(tc.name, "embedded") {
				t.Skip("PostgreSQL and etcd: run by the full suite")
			}
			up := newRecordingUpstream(t)
			var replicas []*gw
			for _, f := range tc.replicas(t) {
				replicas = append(replicas, newGateway(t, f(t), up.testUpstream, nil))
			}
			h := runClients(t, replicas, up, 6, 60, nil)
			check(t, h, up)
		})
	}
}

// TestLinearizableUnderMemberLoss stops and restarts an etcd member while
// clients write through three replicas, one of which loses its member.
func TestLinearizableUnderMemberLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("etcd: run by the full suite")
	}
	c := testetcd.Start(t, 3)
	prefix := uniquePrefix()
	up := newRecordingUpstream(t)
	var replicas []*gw
	for _, ep := range c.Endpoints() {
		replicas = append(replicas, newGateway(t, etcdFactory([]string{ep}, prefix)(t), up.testUpstream, nil))
	}
	h := runClients(t, replicas, up, 6, 60, func(i int) {
		switch i {
		case 15:
			c.StopMember(0)
		case 40:
			c.RestartMember(0)
		}
	})
	check(t, h, up)
}
