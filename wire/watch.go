package wire

import (
	"context"
	"net/http"
)

// NewWatchRequest returns the request of a lease watch (GET
// /v1/leases/{name}/watch) at url, the watch's absolute URL: it accepts
// text/event-stream, resumes after lastEventID when that is set
// (Last-Event-ID), and sends key, when set, as a bearer token. Its error
// is http.NewRequestWithContext's.
func NewWatchRequest(ctx context.Context, url, lastEventID, key string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req, nil
}
