package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fencegw/fencegw/wire"
)

// run campaigns for the Lease until ctx ends, writing while it leads.
func run(ctx context.Context, o options) error {
	cfg, err := config(o.kubeconfig)
	if err != nil {
		return err
	}
	client, err := coordinationv1.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.namespace, Name: o.lease},
		Client:     client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Name:            o.lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { lead(ctx, client, o) },
			OnStoppedLeading: func() { fmt.Println("stopped leading") },
		},
	})
	if err != nil {
		return err
	}
	le.Run(ctx)
	return nil
}

// config loads the kubeconfig file, or the in-cluster configuration.
func config(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// lead learns this term's epoch from the Lease it now holds, then writes
// with it every interval until ctx ends (the lead was lost or the command
// stops). The epoch is read from the Lease, never counted locally: it is
// the number fencegw compares with.
func lead(ctx context.Context, client coordinationv1.LeasesGetter, o options) {
	lease, err := client.Leases(o.namespace).Get(ctx, o.lease, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != o.identity {
		fmt.Println("lost the Lease before learning the epoch:", err)
		return
	}
	var epoch int64
	if lease.Spec.LeaseTransitions != nil {
		epoch = int64(*lease.Spec.LeaseTransitions)
	}
	fmt.Printf("leading epoch=%d\n", epoch)
	hc := &http.Client{Timeout: 10 * time.Second}
	for {
		status := write(ctx, hc, o.write, epoch)
		fmt.Printf("write epoch=%d status=%s\n", epoch, status)
		select {
		case <-ctx.Done():
			return
		case <-time.After(o.interval):
		}
	}
}

// write POSTs one write through fencegw with epoch as its token and
// returns the answer's status code, or the error.
func write(ctx context.Context, hc *http.Client, url string, epoch int64) string {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, strings.NewReader("work"))
	if err != nil {
		return err.Error()
	}
	req.Header.Set(wire.TokenHeader, strconv.FormatInt(epoch, 10))
	resp, err := hc.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return strconv.Itoa(resp.StatusCode)
}
