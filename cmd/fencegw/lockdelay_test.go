package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestContenderCannotVoidLockDelay: after a grant with a lock-delay lapses,
// a contender reads the holder and epoch from its 409 lock-delay answer and
// releases the lapsed grant with them (twice, and with an older epoch):
// the next acquire is still 409 lock-delay, on every store, until the
// delay ends.
func TestContenderCannotVoidLockDelay(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"embedded": func(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") },
	}
	for name, open := range sharedStores {
		stores[name] = open
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			gw := start(t, "--store", store(t), "--route", "/w/=http://127.0.0.1:9")
			lease := gw.api + "/v1/leases/job/"
			call := func(op, body string) controlAnswer { return controlCall(t, "POST", lease+op, "", body) }
			if a := call("acquire", `{"holder":"node-a","ttl_seconds":30}`); a.status != http.StatusOK {
				t.Fatalf("acquire: %d %s", a.status, a.raw)
			}
			const delay = 4 * time.Second
			ttl := 1
			if name == "etcd" {
				ttl = 2 // etcd grants whole seconds from 2
			}
			g := call("acquire", fmt.Sprintf(`{"holder":"node-a","ttl_seconds":%d,"lock_delay_seconds":%d}`, ttl, int(delay.Seconds())))
			if g.status != http.StatusOK {
				t.Fatalf("acquire with a lock-delay: %d %s", g.status, g.raw)
			}
			var refused controlAnswer
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if refused = call("acquire", `{"holder":"node-b","ttl_seconds":30}`); refused.body["type"] == "urn:fencegw:problem:lock-delay" {
					break
				}
				if refused.status != http.StatusConflict || time.Now().After(deadline) {
					t.Fatalf("acquire by a contender before and at the lapse: %d %s", refused.status, refused.raw)
				}
			}
			lapsed := time.Now()
			holder, epoch := refused.body["holder"], refused.body["current_epoch"]
			for _, body := range []string{
				fmt.Sprintf(`{"holder":%q,"epoch":%s}`, holder, epoch),
				fmt.Sprintf(`{"holder":%q,"epoch":%s}`, holder, epoch),
				fmt.Sprintf(`{"holder":%q,"epoch":%s}`, holder, g.body["epoch"]),
				`{"holder":"node-a","epoch":1}`,
			} {
				call("release", body)
				if a := call("acquire", `{"holder":"node-b","ttl_seconds":30}`); a.body["type"] != "urn:fencegw:problem:lock-delay" {
					t.Fatalf("acquire after a release of %s = %d %s, want 409 lock-delay", body, a.status, a.raw)
				}
			}
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				a := call("acquire", `{"holder":"node-b","ttl_seconds":30}`)
				if a.status == http.StatusOK {
					break
				}
				if a.body["type"] != "urn:fencegw:problem:lock-delay" || time.Now().After(deadline) {
					t.Fatalf("acquire after the lock-delay: %d %s", a.status, a.raw)
				}
			}
			if ran := time.Since(lapsed); ran < delay-1500*time.Millisecond {
				t.Fatalf("the lock-delay of %s ended %s after the lapse", delay, ran)
			}
		})
	}
}
