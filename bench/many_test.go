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
	before, err := g.rssBytes()
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
	after, err := g.rssBytes()
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\nfirst writes to new resources (embedded): %.0f/s, p99 %s; %d resources, RSS %+d KiB (%.0f B per resource)\n",
		res.rps, res.p99, res.total, (after-before)>>10, float64(after-before)/float64(max(res.total, 1)))
}
