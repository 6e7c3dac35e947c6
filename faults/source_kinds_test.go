package faults

import (
	"testing"
	"time"
)

// sourceKind is one kind of epoch source in the fault plan of
// TestEpochSources. Adding a kind is adding one entry to sourceKinds: how
// to start its server (start), and in the sourceEnv start returns, the
// route's epoch_source, how a leader acquires, renews and loses a term
// (elector), and which of the server's faults can be made (pause, kill).
type sourceKind struct {
	// name is the epoch_source kind.
	name string
	// start starts the source's server for t — failing t under CI=true
	// when it cannot, skipping it otherwise (as the testutil helpers do)
	// — and returns it running; t's cleanup stops it.
	start func(t *testing.T) *sourceEnv
}

// sourceKinds are the kinds TestEpochSources runs.
func sourceKinds() []sourceKind {
	return []sourceKind{
		{name: "redis", start: startRedisSource},
		{name: "zookeeper", start: startZKSource},
		{name: "postgres", start: startPGSource},
		{name: "etcd", start: startEtcdSource},
	}
}

// kubeSourceKinds are the kinds TestEpochSourcesKube runs: those whose
// server is kube-apiserver, which scripts/test.sh may still be building
// while TestEpochSources runs.
func kubeSourceKinds() []sourceKind {
	return []sourceKind{{name: "kubernetes", start: startKubeSource}}
}

// sourceEnv is a running epoch source as the plan drives it.
type sourceEnv struct {
	// route is the epoch_source of the gateways' route /src/{resource}/,
	// whose servers each replica reaches through proxies of its own (the
	// source-net-* faults are made there).
	route sourceRoute
	// ttl is the leaders' lease in the source: a lock's PX, a session's
	// timeout.
	ttl time.Duration
	// zeroEpoch: the source's first term of a resource is at epoch 0 (a
	// Lease's leaseTransitions); the run must then admit writes at 0.
	zeroEpoch bool
	// elector returns a new participant named holder, with connections
	// of its own, closed when t ends.
	elector func(t *testing.T, holder string) elector
	// pause and resume freeze the server (SIGSTOP) and let it run again;
	// kill crashes it (SIGKILL) and restart brings it back with the data
	// it had persisted. Nil when the kind's server cannot be frozen or
	// killed on its own (it is embedded in the test process, say): the
	// plan then leaves those faults out. They are called on the test's
	// goroutine.
	pause, resume, kill, restart func()
}

// sourceFaults is the plan's repertoire for env: the server frozen and
// crashed where that can be done, the network between one replica (or
// every replica) and the source slowed, blackholed or reset, and a
// gateway killed. A fault that cuts replicas from the source is held until
// each of them answered a 503, one that slows it until each admitted a
// write: a step cannot pass without meeting its fault.
func sourceFaults(env *sourceEnv) []fault {
	var fs []fault
	if env.pause != nil {
		fs = append(fs, fault{name: "source-sigstop", storeCut: true, held: unavailableThrough(nil),
			inject: func(*cluster) { env.pause() }, heal: func(*cluster) { env.resume() }})
	}
	if env.kill != nil {
		fs = append(fs, fault{name: "source-sigkill", storeCut: true, held: unavailableThrough(nil),
			inject: func(*cluster) { env.kill() }, heal: func(*cluster) { env.restart() }})
	}
	return append(fs,
		fault{name: "source-net-latency", held: admittedThrough([]int{0, 1, 2}),
			inject: func(c *cluster) { c.sourceFault(nil, Fault{Latency: 100 * time.Millisecond}) },
			heal:   func(c *cluster) { c.sourceFault(nil, Fault{}) }},
		fault{name: "source-net-blackhole", replicas: []int{0}, storeCut: true, held: unavailableThrough([]int{0}),
			inject: func(c *cluster) { c.sourceFault([]int{0}, Fault{Blackhole: true}) },
			heal:   func(c *cluster) { c.sourceFault([]int{0}, Fault{}) }},
		fault{name: "source-net-reset", replicas: []int{1}, storeCut: true, held: unavailableThrough([]int{1}),
			inject: func(c *cluster) { c.sourceFault([]int{1}, Fault{Reset: true}) },
			heal:   func(c *cluster) { c.sourceFault([]int{1}, Fault{}) }},
		faultNamed("gateway-sigkill"),
	)
}

// unavailableThrough is a held condition: a sourced write was answered 503
// through each of replicas (all three when nil) since the fault was in
// force.
func unavailableThrough(replicas []int) func(*workload, time.Time) bool {
	if replicas == nil {
		replicas = []int{0, 1, 2}
	}
	return func(w *workload, inForce time.Time) bool {
		return sourcedThrough(w, replicas, inForce, OutcomeUnavailable)
	}
}

// admittedThrough is a held condition: a sourced write was admitted
// through each of replicas since the fault was in force.
func admittedThrough(replicas []int) func(*workload, time.Time) bool {
	return func(w *workload, inForce time.Time) bool {
		return sourcedThrough(w, replicas, inForce, OutcomeAdmitted)
	}
}

// sourcedThrough reports whether, through each of replicas, a sourced
// write called after since ended with outcome.
func sourcedThrough(w *workload, replicas []int, since time.Time, outcome Outcome) bool {
	met := map[int]bool{}
	for _, op := range w.history() {
		if op.Kind == OpSourced && op.Outcome == outcome && op.Call.After(since) {
			met[op.Replica] = true
		}
	}
	for _, r := range replicas {
		if !met[r] {
			return false
		}
	}
	return true
}
