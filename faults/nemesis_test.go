package faults

import (
	"syscall"
	"time"
)

// fault is one kind of fault the nemesis can make.
type fault struct {
	name string
	// stores lists the stores it applies to.
	stores []string
	// replicas it is aimed at (nil: all); storeCut: they cannot reach the
	// store while it lasts.
	replicas []int
	storeCut bool
	// inject makes the fault; heal ends it.
	inject, heal func(c *cluster)
	// held, when set, keeps the fault in force past its hold (bounded by
	// heldMax) until it reports that the workload met the fault since
	// inForce, so that a step cannot pass without exercising it.
	held func(w *workload, inForce time.Time) bool
}

var both = []string{"postgres", "etcd"}

// faults is the nemesis's repertoire. Replicas aimed at are fixed so that
// a run is reproducible from its seed.
var faultKinds = []fault{
	{name: "store-restart", stores: []string{"postgres"}, storeCut: true,
		inject: func(c *cluster) { must(c, c.pg.Stop()) },
		heal:   func(c *cluster) { must(c, c.pg.Restart()) }},
	{name: "store-sigkill", stores: []string{"postgres"}, storeCut: true,
		inject: func(c *cluster) { must(c, c.pg.Kill()) },
		heal:   func(c *cluster) { must(c, c.pg.Restart()) }},
	{name: "pg-terminate-backends", stores: []string{"postgres"},
		inject: func(c *cluster) { c.pg.TerminateBackends(c.t, dbName(c.dsn)) },
		heal:   func(c *cluster) {}},
	{name: "store-hard-stop", stores: []string{"etcd"}, storeCut: true,
		inject: func(c *cluster) { c.etcd.Stop() },
		heal:   func(c *cluster) { c.etcd.Restart() }},
	{name: "etcd-leader-stop", stores: []string{"etcd"},
		inject: func(c *cluster) { c.stoppedMember = c.etcd.Leader(); c.etcd.StopMember(c.stoppedMember) },
		heal:   func(c *cluster) { c.etcd.RestartMember(c.stoppedMember) }},
	{name: "etcd-member-blackhole", stores: []string{"etcd"},
		inject: func(c *cluster) { c.memberFault(0, Fault{Blackhole: true}) },
		heal:   func(c *cluster) { c.memberFault(0, Fault{}) }},
	{name: "store-net-latency", stores: both,
		inject: func(c *cluster) { c.storeFault(nil, Fault{Latency: 100 * time.Millisecond}) },
		heal:   func(c *cluster) { c.storeFault(nil, Fault{}) }},
	{name: "store-net-blackhole", stores: both, replicas: []int{0}, storeCut: true,
		inject: func(c *cluster) { c.storeFault([]int{0}, Fault{Blackhole: true}) },
		heal:   func(c *cluster) { c.storeFault([]int{0}, Fault{}) }},
	{name: "store-net-reset", stores: both, replicas: []int{1}, storeCut: true,
		inject: func(c *cluster) { c.storeFault([]int{1}, Fault{Reset: true}) },
		heal:   func(c *cluster) { c.storeFault([]int{1}, Fault{}) }},
	{name: "store-net-slow-close", stores: both, replicas: []int{2},
		inject: func(c *cluster) { c.storeFault([]int{2}, Fault{SlowClose: 500 * time.Millisecond}) },
		heal:   func(c *cluster) { c.storeFault([]int{2}, Fault{}) }},
	{name: "upstream-net-latency", stores: both, replicas: []int{2},
		inject: func(c *cluster) { c.upProxies[2].Set(Fault{Latency: 300 * time.Millisecond}) },
		heal:   func(c *cluster) { c.upProxies[2].Set(Fault{}) }},
	{name: "upstream-net-blackhole", stores: both, replicas: []int{0},
		inject: func(c *cluster) { c.upProxies[0].Set(Fault{Blackhole: true}) },
		heal:   func(c *cluster) { c.upProxies[0].Set(Fault{}) }},
	{name: "upstream-net-reset", stores: both, replicas: []int{1},
		inject: func(c *cluster) { c.upProxies[1].Set(Fault{Reset: true}) },
		heal:   func(c *cluster) { c.upProxies[1].Set(Fault{}) }},
	{name: "upstream-net-slow-close", stores: both, replicas: []int{2},
		inject: func(c *cluster) { c.upProxies[2].Set(Fault{SlowClose: 500 * time.Millisecond}) },
		heal:   func(c *cluster) { c.upProxies[2].Set(Fault{}) }},
	{name: "gateway-sigkill", stores: both, replicas: []int{1},
		inject: func(c *cluster) { c.gateways[1].kill() },
		heal:   func(c *cluster) { c.gateways[1].start(c.t) }},
	{name: "gateway-sigstop", stores: both, replicas: []int{2},
		inject: func(c *cluster) { c.gateways[2].signal(syscall.SIGSTOP) },
		heal:   func(c *cluster) { c.gateways[2].signal(syscall.SIGCONT) }},
	{name: clockJumpFault, stores: both, replicas: []int{0, 1},
		inject: func(c *cluster) { c.jumper.inject(c) },
		heal:   func(c *cluster) { c.jumper.heal(c) }},
	{name: "slow-upstream", stores: both,
		inject: func(c *cluster) { c.up.slow.Store(int64(leaseTTL + 500*time.Millisecond)) },
		heal:   func(c *cluster) { c.up.slow.Store(0) }},
}

// faultNamed is the repertoire's fault called name.
func faultNamed(name string) fault {
	for _, f := range faultKinds {
		if f.name == name {
			return f
		}
	}
	panic("faults: no fault " + name)
}

// storeFault sets f on the store proxies of replicas (all when nil).
func (c *cluster) storeFault(replicas []int, f Fault) { setProxies(c.storeProxies, replicas, f) }

// sourceFault sets f on the epoch source proxies of replicas (all when
// nil).
func (c *cluster) sourceFault(replicas []int, f Fault) { setProxies(c.sourceProxies, replicas, f) }

// setProxies sets f on proxies[r] for each of replicas (all when nil).
func setProxies(proxies [][]*Proxy, replicas []int, f Fault) {
	for r, ps := range proxies {
		if replicas != nil && !(Window{Replicas: replicas}).affects(r) {
			continue
		}
		for _, p := range ps {
			p.Set(f)
		}
	}
}

// memberFault sets f on every replica's way to etcd member m.
func (c *cluster) memberFault(m int, f Fault) {
	for _, ps := range c.storeProxies {
		ps[m].Set(f)
	}
}

func must(c *cluster, err error) {
	if err != nil {
		c.t.Fatalf("nemesis: %v", err)
	}
}
