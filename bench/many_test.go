package bench

import (
	"fmt"
	"path/filepath"
	"testing"
)

// manyResources measures first writes to new resources on the embedded
// store (every request names a resource never seen), and the resident
// memory each resource costs the gateway.
func manyResources(b *testing.B, dir, bin, upstream string, cpuProxy, cpuLoad int) {
	g := startGateway(b, dir, bin, "many", filepath.Join(dir, "many.db"), upstream, cpuProxy)
	g.write(b, "/raw/send", "1", 202)
	before, err := g.memory()
	if err != nil {
		b.Fatal(err)
	}
	res, err := runWrk(dir, g.proxy+"/many/send", load{headers: map[string]string{"Fencing-Token": "1"}, unique: true},
		*conns, *many, cpuLoad)
	if err != nil {
		b.Fatal(err)
	}
	if res.non2xx > 0 || res.errors > 0 {
		b.Fatalf("many resources: %d of %d answers not 202 (%d socket errors)", res.non2xx, res.total, res.errors)
	}
	after, err := g.memory()
	if err != nil {
		b.Fatal(err)
	}
	n := float64(max(res.total, 1))
	fmt.Printf("\nfirst writes to new resources (embedded): %.0f/s, p99 %s; %d resources;\n"+
		"per resource: %.0f B of anonymous memory (the HWM cache), %.0f B of RSS (with the store's mapped file)\n",
		res.rps, res.p99, res.total, float64(after.anon-before.anon)/n, float64(after.rss-before.rss)/n)
}
