package config

import (
	"strings"
	"testing"
)

// TestReadmeEpochSourcesValidate: the README's "Bring your own lease"
// configuration, one route per epoch source kind, passes `config validate`
// as it stands, and names every kind the gateway knows.
func TestReadmeEpochSourcesValidate(t *testing.T) {
	readme := readDoc(t, "README.md")
	_, section, ok := strings.Cut(readme, "## Bring your own lease")
	if !ok {
		t.Fatal(`README.md has no "Bring your own lease" section`)
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal(`README.md's "Bring your own lease" section has no yaml block`)
	}
	c, err := Parse([]byte(block))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, block)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate: %v\n%s", err, block)
	}
	kinds := map[string]bool{}
	for _, r := range c.Routes {
		if r.EpochSource != nil {
			kinds[r.EpochSource.Kind] = true
		}
	}
	for _, k := range []string{"postgres", "etcd", "redis", "zookeeper", "kubernetes"} {
		if !kinds[k] {
			t.Errorf("the README's example has no route with epoch_source kind %q", k)
		}
	}
}
