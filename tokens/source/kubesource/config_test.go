package kubesource

import (
	"slices"
	"testing"

	"k8s.io/client-go/rest"
)

// TestTuneHTTP1: the client speaks HTTP/1.1 only (see tune), with a
// transport of its own.
func TestTuneHTTP1(t *testing.T) {
	c := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{NextProtos: []string{"h2", "http/1.1"}}}
	if err := tune(c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.NextProtos, []string{"http/1.1"}) || c.Proxy == nil {
		t.Fatalf("tuned NextProtos %v, Proxy set %v: want http/1.1 only and a transport of its own", c.NextProtos, c.Proxy != nil)
	}
}
