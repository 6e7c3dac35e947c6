package wire_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/fencegw/fencegw/wire"
)

func TestCheckMembers(t *testing.T) {
	known := []string{"holder", "epoch"}
	for _, ok := range []string{`{"holder":"a","epoch":7}`, `{}`, `{"other":1,"other":2}`, `[1]`, `nope`, `{"holder":`} {
		if err := wire.CheckMembers([]byte(ok), known...); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{`{"holder":"a","Epoch":7}`, `{"HOLDER":"a","EPOCH":"7"}`, `{"holder":"a","epoch":8,"epoch":7}`,
		`{"holder":"b","holder":"a","epoch":7}`, `{"holder":"a","\u0065poch":1,"epoch":2}`, `{"ſ":1}`} {
		err := wire.CheckMembers([]byte(bad), append(known, "s")...)
		if !errors.Is(err, wire.ErrMembers) {
			t.Errorf("%s: %v, want ErrMembers", bad, err)
		}
	}
}

// FuzzCheckMembers: whenever CheckMembers accepts a JSON object, decoding
// it with encoding/json gives each known member the value of its one exact
// occurrence (a first-wins reader and a last-wins reader agree).
func FuzzCheckMembers(f *testing.F) {
	for _, s := range []string{`{"epoch":1}`, `{"epoch":1,"EPOCH":2}`, `{"epoch":1,"epoch":2}`, `{"ep\u006fch":3}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if wire.CheckMembers([]byte(in), "epoch") != nil {
			return
		}
		var all map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &all) != nil {
			return
		}
		var v struct {
			Epoch json.RawMessage `json:"epoch"`
		}
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		if exact, ok := all["epoch"]; ok && string(exact) != string(v.Epoch) {
			t.Fatalf("%s: the exact member says %s, the decoder %s", in, exact, v.Epoch)
		}
	})
}
