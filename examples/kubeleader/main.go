// Command kubeleader is a leader elected with client-go's leaderelection
// and a LeaseLock (a coordination.k8s.io/v1 Lease), which, while it leads,
// writes through a fencegw raw route whose epoch_source is that Lease
// (kind kubernetes), presenting the Lease's spec.leaseTransitions as its
// fencing token in the Fencing-Token header, in decimal.
//
//	kubeleader -kubeconfig ~/.kube/config -namespace default -lease report-generator \
//	    -write http://fencegw:8080/jobs/run
//
// fencegw admits a write only while its epoch is the Lease's current
// leaseTransitions and the Lease has not lapsed: a leader that stalled
// past its lease (a GC pause, a frozen VM, a partition) and writes on
// after another took over is refused with 412, whatever it believes.
//
// Two caveats of client-go that fencing depends on:
//
//   - leaderelection gives no fencing by itself. OnStoppedLeading runs
//     only once the leader noticed it lost the Lease (after RenewDeadline
//     on its own clock); writes in flight or made before then reach the
//     store unless something like fencegw checks them.
//   - leaseTransitions changes only when the holder's identity changes.
//     The same identity acquiring the Lease again (a restart with the same
//     identity, or after its own Lease lapsed) keeps the epoch, so the
//     gateway cannot tell its two terms apart. Give every run a unique
//     identity: the default here is the host name plus a random suffix.
//
// Each write's outcome is printed as "write epoch=E status=S"; taking and
// losing the lead as "leading epoch=E" and "stopped leading".
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	kubeconfig, namespace, lease, identity, write string
	leaseDuration, renewDeadline, retryPeriod     time.Duration
	interval                                      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (empty: the in-cluster configuration)")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace of the Lease")
	flag.StringVar(&o.lease, "lease", "kubeleader", "name of the Lease (fencegw's epoch_source lease)")
	flag.StringVar(&o.identity, "id", defaultIdentity(), "this run's identity; must be unique per run")
	flag.StringVar(&o.write, "write", "", "URL of the fenced write, through fencegw's raw route")
	flag.DurationVar(&o.leaseDuration, "lease-duration", 15*time.Second, "leaderelection LeaseDuration")
	flag.DurationVar(&o.renewDeadline, "renew-deadline", 10*time.Second, "leaderelection RenewDeadline")
	flag.DurationVar(&o.retryPeriod, "retry-period", 2*time.Second, "leaderelection RetryPeriod")
	flag.DurationVar(&o.interval, "interval", time.Second, "time between writes while leading")
	flag.Parse()
	if o.write == "" {
		fmt.Fprintln(os.Stderr, "kubeleader: -write is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "kubeleader:", err)
		os.Exit(1)
	}
}

// defaultIdentity is the host name and a random suffix, unique per run.
func defaultIdentity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}
