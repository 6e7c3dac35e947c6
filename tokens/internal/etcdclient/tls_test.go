package etcdclient

import (
	"testing"
)

func TestTLSFor(t *testing.T) {
	if c, err := tlsFor([]string{"127.0.0.1:2379", "http://a:2379"}); c != nil || err != nil {
		t.Fatalf("plaintext: %v, %v", c, err)
	}
	if c, err := tlsFor([]string{"https://a:2379", "HTTPS://b:2379"}); c == nil || err != nil {
		t.Fatalf("https: %v, %v", c, err)
	}
	for _, eps := range [][]string{{"https://a:2379", "b:2379"}, {""}} {
		if _, err := tlsFor(eps); err == nil {
			t.Fatalf("%q accepted", eps)
		}
	}
}
