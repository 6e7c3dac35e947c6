package leader_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/fencegw/fencegw/leader"
)

// An Elector campaigns for the lease "invoice-sweeper" and runs the work
// while it leads; cancelling Run's context stops the work and, with
// ReleaseOnCancel, hands the lease back at once.
func ExampleElector() {
	// A fencegw in this process, fencing the resource invoice-sweeper.
	gw, err := startGateway("invoice-sweeper")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := leader.New(leader.Config{
		Endpoint:        gw.ControlURL,
		Name:            "invoice-sweeper",
		Holder:          "node-a",
		ReleaseOnCancel: true,
		Logger:          slog.New(slog.DiscardHandler),
		Callbacks: leader.Callbacks{
			OnStartedLeading: func(ctx context.Context, term leader.Term) {
				fmt.Println("leading at epoch", term.Epoch)
				// The work runs here until ctx is cancelled; this one is
				// done at once, so it ends the campaign.
				cancel()
				<-ctx.Done()
			},
			OnStoppedLeading: func(term leader.Term, reason error) {
				fmt.Printf("stopped leading epoch %d: %v\n", term.Epoch, reason)
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Run:", e.Run(ctx))
	// Output:
	// leading at epoch 1
	// stopped leading epoch 1: context canceled
	// Run: context canceled
}

// The Elector's Transport fences each write with the current term: the
// gateway admits it at the term's epoch, and once the term ended the
// Transport refuses to send at all.
func ExampleElector_Transport() {
	gw, err := startGateway("invoice-sweeper")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()

	var e *leader.Elector
	client := &http.Client{} // its Transport is set once e exists
	post := func(ctx context.Context) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.ProxyURL+"/email/send", strings.NewReader("reminder"))
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + ": " + string(body), nil
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err = leader.New(leader.Config{
		Endpoint: gw.ControlURL,
		Name:     "invoice-sweeper",
		Holder:   "node-a",
		Logger:   slog.New(slog.DiscardHandler),
		Callbacks: leader.Callbacks{
			OnStartedLeading: func(ctx context.Context, term leader.Term) {
				defer cancel()
				answer, err := post(ctx)
				fmt.Println("while leading:", answer, err)
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	client.Transport = e.Transport(nil)
	fmt.Println("Run:", e.Run(ctx))

	_, err = post(context.Background())
	fmt.Println("after stepping down, not leader:", errors.Is(err, leader.ErrNotLeader))
	// Output:
	// while leading: 201 Created: upstream saw Fencing-Epoch 1 <nil>
	// Run: context canceled
	// after stepping down, not leader: true
}
