package config

import (
	"fmt"
	"strings"

	"github.com/fencegw/fencegw/tokens/source/kubesource"
	"github.com/fencegw/fencegw/tokens/source/redissource"
	"github.com/fencegw/fencegw/tokens/source/zksource"
)

// EpochSource names an external election: the truth about who leads a
// route's resource when its leaders bring their own lease.
type EpochSource struct {
	// Kind is postgres (a leader_lease table), etcd (a concurrency
	// Election, whose epoch is the leader key's create revision), redis
	// (a lock key whose value is the epoch), zookeeper (an election of
	// ephemeral sequential znodes, whose epoch is the leader node's czxid)
	// or kubernetes (a coordination.k8s.io/v1 Lease, whose epoch is its
	// leaseTransitions).
	Kind string `yaml:"kind"`
	// DSN is the PostgreSQL connection string (postgres).
	DSN string `yaml:"dsn"`
	// Table and its columns (postgres); defaults leader_lease, name,
	// holder, epoch, expires_at.
	Table         string `yaml:"table"`
	NameColumn    string `yaml:"name_column"`
	HolderColumn  string `yaml:"holder_column"`
	EpochColumn   string `yaml:"epoch_column"`
	ExpiresColumn string `yaml:"expires_column"`
	// Endpoints are the etcd client endpoints, host:port (etcd).
	Endpoints []string `yaml:"endpoints"`
	// Prefix is the election prefix (etcd).
	Prefix string `yaml:"prefix"`
	// Address is the Redis primary: host:port, or a redis:// or rediss://
	// URL with password and database (redis).
	Address string `yaml:"address"`
	// Key is the lock key, where {resource} stands for the route's
	// resource (redis); default fencegw:{resource}.
	Key string `yaml:"key"`
	// Servers are the ZooKeeper ensemble's client addresses, host:port
	// (zookeeper).
	Servers []string `yaml:"servers"`
	// Path is the election's parent znode (zookeeper); {resource} in it
	// stands for the resource name.
	Path string `yaml:"path"`
	// Kubeconfig is the kubeconfig file (kubernetes); when empty, the
	// in-cluster configuration, else the files $KUBECONFIG lists.
	Kubeconfig string `yaml:"kubeconfig"`
	// Namespace holds the Leases (kubernetes); default "default".
	Namespace string `yaml:"namespace"`
	// Lease is the Lease's name (kubernetes), where {resource} stands for
	// the route's resource; default {resource}.
	Lease string `yaml:"lease"`
}

// sourceKinds are the kinds of epoch source, as kind names them.
var sourceKinds = []string{"postgres", "etcd", "redis", "zookeeper", "kubernetes"}

// oneElection reports whether the source reads one election for every
// resource of the route: an etcd election, a Redis key without
// {resource}, or a ZooKeeper path without {resource}.
func (s *EpochSource) oneElection() bool {
	switch s.Kind {
	case "etcd":
		return true
	case "redis":
		return s.Key != "" && !strings.Contains(s.Key, redissource.ResourcePlaceholder)
	case "zookeeper":
		return !strings.Contains(s.Path, zksource.ResourcePlaceholder)
	case "kubernetes":
		return s.Lease != "" && !strings.Contains(s.Lease, kubesource.ResourcePlaceholder)
	}
	return false
}

func (s *EpochSource) validate(at string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: at + "." + field, Msg: fmt.Sprintf(format, args...)})
	}
	switch s.Kind {
	case "postgres":
		if KindOf(s.DSN) != StorePostgres {
			bad("dsn", "must be a postgres:// URL")
		}
	case "etcd":
		checkAddrs("endpoints", s.Endpoints, bad)
		if s.Prefix == "" {
			bad("prefix", "the election prefix is required")
		}
	case "redis":
		if s.Address == "" {
			bad("address", "the Redis primary is required (host:port, or a redis:// or rediss:// URL)")
		} else if _, err := redissource.ParseAddress(s.Address); err != nil {
			bad("address", "%v", err)
		}
	case "zookeeper":
		s.validateZooKeeper(bad)
	case "kubernetes":
		s.validateKubernetes(bad)
	default:
		bad("kind", "must be postgres, etcd, redis, zookeeper or kubernetes, got %q%s", s.Kind, didYouMean(s.Kind, sourceKinds))
		return errs
	}
	s.validateOtherKinds(bad)
	return errs
}

// validateZooKeeper checks the keys of kind zookeeper.
func (s *EpochSource) validateZooKeeper(bad func(field, format string, args ...any)) {
	checkAddrs("servers", s.Servers, bad)
	if s.Path == "" {
		bad("path", "the election's parent znode is required")
	} else if err := zksource.CheckPath(s.Path); err != nil {
		bad("path", "%v", err)
	}
}

// checkAddrs reports to bad a list of host:port addresses, the key field,
// that is empty, and each of its entries that is not such an address
// (as field[i]).
func checkAddrs(field string, addrs []string, bad func(field, format string, args ...any)) {
	if len(addrs) == 0 {
		bad(field, "at least one host:port is required")
	}
	for i, a := range addrs {
		if err := checkAddr(a); err != nil {
			bad(fmt.Sprintf("%s[%d]", field, i), "%v", err)
		}
	}
}

// validateOtherKinds reports the keys of a kind other than s.Kind, which
// is one of sourceKinds.
func (s *EpochSource) validateOtherKinds(bad func(field, format string, args ...any)) {
	if s.Kind != "postgres" && (s.DSN != "" || s.Table != "") {
		bad("dsn", "dsn and table are for kind postgres")
	}
	if s.Kind != "etcd" && (len(s.Endpoints) > 0 || s.Prefix != "") {
		bad("endpoints", "endpoints and prefix are for kind etcd")
	}
	if s.Kind != "redis" && (s.Address != "" || s.Key != "") {
		bad("address", "address and key are for kind redis")
	}
	if s.Kind != "zookeeper" && (len(s.Servers) > 0 || s.Path != "") {
		bad("servers", "servers and path are for kind zookeeper")
	}
	if s.Kind != "kubernetes" && (s.Kubeconfig != "" || s.Namespace != "" || s.Lease != "") {
		bad("lease", "kubeconfig, namespace and lease are for kind kubernetes")
	}
}
