// Command bareproxy is the benchmark's baseline Go proxy: a bare
// httputil.ReverseProxy with a tuned transport and pooled buffers, what a
// team would write before fencing anything.
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen `address`")
	upstream := flag.String("upstream", "", "upstream base `URL`")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		log.Fatalf("bareproxy: -upstream %q: want a URL", *upstream)
	}
	t := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	p := &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() },
		Transport:  t,
		BufferPool: &bufferPool{},
	}
	s := &http.Server{Addr: *listen, Handler: p, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(s.ListenAndServe())
}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
