package guard

import (
	"fmt"
	"testing"
)

// FuzzFramingScanner checks the scanner's invariants on any stream: it
// never panics; cutting the stream into other pieces changes nothing; and
// the requests it accepted whole are what net/http.ReadRequest reads from
// the same bytes: as many, with the same bodies, and nothing left over.
func FuzzFramingScanner(f *testing.F) {
	for _, c := range validStreams {
		f.Add([]byte(c.data), uint64(1))
	}
	post := "POST / HTTP/1.1\r\nHost: gw\r\n"
	for _, s := range []string{
		post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		post + "Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
		post + "Transfer-Encoding: chunked\r\n\r\n1;a=\"\\\"\"\r\nx\r\n0\r\nT: 1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: gw\r\nFencing-Resource: r\r\n s\r\n\r\n",
		"GET / HTTP/1.1\nHost: gw\n\n",
		"CONNECT [::1]:443 HTTP/1.1\r\nHost: gw\r\n\r\n",
	} {
		f.Add([]byte(s), uint64(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		const maxHead = 1024
		all := scanAll(data, maxHead)
		rng := seed | 1
		pieces := scanPieces(data, maxHead, func() int {
			rng = rng*6364136223846793005 + 1442695040888963407
			return int(rng>>59) + 1 // 1 to 32 bytes
		})
		if !sameResult(all, pieces) {
			t.Fatalf("in pieces %v %v, at once %v %v", pieces.events, pieces.err, all.events, all.err)
		}
		if len(all.ends) == 0 {
			return
		}
		accepted := data[:all.ends[len(all.ends)-1]]
		bodies, err := netHTTPReads(accepted)
		if err != nil || fmt.Sprint(bodies) != fmt.Sprint(all.bodies) {
			t.Fatalf("scanner accepted %q with bodies %v; net/http reads bodies %v, error %v", accepted, all.bodies, bodies, err)
		}
	})
}
