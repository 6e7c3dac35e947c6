package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/fencegw/fencegw/wire"
)

// LeaseEvent is one event of a lease watch: its id, its kind (acquired,
// renewed, released, expired, lock_delay) and its JSON data.
type LeaseEvent struct {
	ID   string
	Kind string
	Data json.RawMessage
}

// WatchLease streams lease name's events (GET /v1/leases/{name}/watch),
// resuming after lastID when it is set, and calls fn with each, until ctx
// ends (nil), the stream ends or fails, or fn returns an error. The
// client's timeout must be zero: a watch lasts. A refusal is an error
// naming the answer.
func (c *Client) WatchLease(ctx context.Context, name, lastID string, fn func(LeaseEvent) error) error {
	req, err := wire.NewWatchRequest(ctx, c.URL("/v1/leases/"+url.PathEscape(name)+"/watch"), lastID, c.Key)
	if err != nil {
		return err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if resp.StatusCode != http.StatusOK {
		a, err := ReadAnswer(resp)
		if err != nil {
			return err
		}
		return fmt.Errorf("watch: %s", a)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 4096), 1<<20)
	var ev LeaseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Kind != "" {
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev = LeaseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			ev.Kind = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.Data = json.RawMessage(line[len("data: "):])
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return fmt.Errorf("watch: the stream ended")
}
