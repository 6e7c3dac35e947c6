package problem

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"
)

// FuzzProblemJSON: the hand-written problem encoder writes exactly what
// encoding/json writes for the same Problem.
func FuzzProblemJSON(f *testing.F) {
	f.Add("stale", "epoch 4 is below 5 of \"r\"", "/email/", "invoice-sweeper", "node-a", int64(4), int64(5), int64(0))
	f.Add("<&>\u2028\u2029", "\x00\x1f\x7f\xff\xfe", "é\t\n\r\\", "\"", "", int64(-1), int64(1<<62), int64(1e18))
	f.Add("", "", "", "", "", int64(0), int64(0), int64(-62135596800))
	f.Fuzz(func(t *testing.T, title, detail, route, resource, holder string, presented, current, unixNano int64) {
		p := Problem{Problem: wire.Problem{Type: TypeStaleEpoch, Title: title, Status: 412, Detail: detail, Route: route,
			Resource: resource, Holder: holder, Lease: resource, Owner: holder, TraceID: route, Instance: detail}}
		if presented > 0 { // epochs are never negative
			p.PresentedEpoch = wire.EpochOf(presented)
		}
		if current > 0 {
			p.CurrentEpoch = wire.EpochOf(current)
		}
		if unixNano != 0 {
			at := time.Unix(0, unixNano).UTC()
			p.ExpiresAt = &at
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(p.Problem); err != nil {
			t.Skip("not encodable:", err)
		}
		if got := p.appendJSON(nil); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendJSON:\n%s\nencoding/json:\n%s", got, want.Bytes())
		}
	})
}
