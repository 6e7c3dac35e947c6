package etcdtls_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/etcdtls"
)

func TestForEndpoints(t *testing.T) {
	if c, err := etcdtls.ForEndpoints([]string{"127.0.0.1:2379", "http://a:2379"}); c != nil || err != nil {
		t.Fatalf("plaintext: %v, %v", c, err)
	}
	if c, err := etcdtls.ForEndpoints([]string{"https://a:2379", "HTTPS://b:2379"}); c == nil || err != nil {
		t.Fatalf("https: %v, %v", c, err)
	}
	for _, eps := range [][]string{{"https://a:2379", "b:2379"}, {""}} {
		if _, err := etcdtls.ForEndpoints(eps); err == nil {
			t.Fatalf("%q accepted", eps)
		}
	}
}
