package auditid

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// TestAuditInvertID: inverted, IDs of tokens.AuditID's form sort in the
// reverse order, and inverting twice gives the ID back.
func TestAuditInvertID(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ids := []string{tokens.AuditID(time.UnixMilli(0)), "9999999999999-ffffffffffffffff", "0000000000000-0000000000000000"}
	for range 2000 {
		ids = append(ids, tokens.AuditID(time.UnixMilli(r.Int64N(4e12)), string(rune(r.IntN(1000)))))
	}
	for _, id := range ids {
		inv := Invert(id)
		if !Canonical(id) || !Canonical(inv) || Invert(inv) != id {
			t.Fatalf("%q inverted is %q, back %q", id, inv, Invert(inv))
		}
	}
	sorted := slices.Sorted(slices.Values(ids))
	inverted := make([]string, len(sorted))
	for i, id := range sorted {
		inverted[i] = Invert(id)
	}
	if !slices.IsSortedFunc(inverted, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatal("inverted IDs do not sort in reverse")
	}
}

// TestAuditInvRange: the inverted range of [lo, hi) holds exactly the IDs
// in it when the bounds are AuditIDRange's (time parts, a cursor), and at
// least them for any other bound.
func TestAuditInvRange(t *testing.T) {
	var ids []string
	for ms := int64(1000); ms < 1010; ms++ {
		for d := range 3 {
			ids = append(ids, tokens.AuditID(time.UnixMilli(ms), string(rune('a'+d))))
		}
	}
	slices.Sort(ids)
	tp := func(ms int64) string { return tokens.AuditIDBefore(time.UnixMilli(ms)) }
	for _, c := range []struct {
		lo, hi string
		exact  bool
	}{
		{"", "", true}, {tp(1003), "", true}, {"", tp(1005), true}, {tp(1002), tp(1007), true},
		{"", ids[13], true}, {tp(1001), ids[20], true}, {"", strings.ToUpper(ids[13]), false},
		{"", ids[13][:20], false}, {"", "zzz", false}, {ids[4], "", false},
	} {
		from, to := InvertedRange("i/", c.lo, c.hi)
		for _, id := range ids {
			key := "i/" + Invert(id)
			inRange := key >= from && key < to
			want := id >= c.lo && (c.hi == "" || id < c.hi)
			if want && !inRange || c.exact && inRange != want {
				t.Errorf("[%q, %q): ID %q in [%q, %q): %v; want %v", c.lo, c.hi, id, from, to, inRange, want)
			}
		}
	}
}
