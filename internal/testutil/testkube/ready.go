package testkube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

// waitReady polls /readyz until it answers 200, p exits, or readyTimeout
// passes.
func (s *Server) waitReady(p *testproc.Process) error {
	hc, err := rest.HTTPClientFor(s.RESTConfig())
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	return p.WaitReady(readyTimeout, 100*time.Millisecond, func() error { return readyz(hc, s.Host()) })
}

// readyz asks host's /readyz once, within 2 s.
func readyz(hc *http.Client, host string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
	}
	return nil
}
