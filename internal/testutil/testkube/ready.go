package testkube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// waitReady polls /readyz until it answers 200, the process exits, or
// readyTimeout passes.
func (s *Server) waitReady(exited <-chan struct{}) error {
	hc, err := rest.HTTPClientFor(s.RESTConfig())
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(readyTimeout)
	for {
		last := readyz(hc, s.Host())
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the server exited (last /readyz: %v)", last)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: %v", readyTimeout, last)
		}
	}
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
