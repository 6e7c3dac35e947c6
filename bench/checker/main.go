// Command checker is the benchmark's "bolt-on" fencing: the check a team
// would put behind nginx's auth_request. It keeps the highest epoch seen
// per resource in memory and answers 204 when the request's Fencing-Token
// is not below it, 412 otherwise. It has none of fencegw's guarantees (no
// store, no leases, no signed tokens): it is the cost floor of a check.
package main

import (
	"flag"
	"log"
	"net/http"
	"strconv"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen `address`")
	flag.Parse()
	var (
		mu  sync.Mutex
		hwm = map[string]int64{}
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		epoch, err := strconv.ParseInt(r.Header.Get("Fencing-Token"), 10, 64)
		if err != nil || epoch <= 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		res := r.Header.Get("Fencing-Resource")
		mu.Lock()
		ok := epoch >= hwm[res]
		if ok {
			hwm[res] = epoch
		}
		mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(s.ListenAndServe())
}
