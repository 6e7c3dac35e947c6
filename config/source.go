package config

import (
	"fmt"
	"strings"
)

// ZooKeeperResource in a zookeeper source's path stands for the resource
// name: each resource reads its own election.
const ZooKeeperResource = "{resource}"

// EpochSource names an external election: the truth about who leads a
// route's resource when its leaders bring their own lease.
type EpochSource struct {
	// Kind is postgres (a leader_lease table), etcd (a concurrency
	// Election, whose epoch is the leader key's create revision) or
	// zookeeper (an election of ephemeral sequential znodes, whose epoch is
	// the leader node's czxid).
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
	// Servers are the ZooKeeper ensemble's client addresses, host:port
	// (zookeeper).
	Servers []string `yaml:"servers"`
	// Path is the election's parent znode (zookeeper); {resource} in it
	// stands for the resource name.
	Path string `yaml:"path"`
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
		if len(s.Endpoints) > 0 || s.Prefix != "" {
			bad("endpoints", "endpoints and prefix are for kind etcd")
		}
		if len(s.Servers) > 0 || s.Path != "" {
			bad("servers", "servers and path are for kind zookeeper")
		}
	case "etcd":
		if len(s.Endpoints) == 0 {
			bad("endpoints", "at least one host:port is required")
		}
		for i, e := range s.Endpoints {
			if err := checkAddr(e); err != nil {
				bad(fmt.Sprintf("endpoints[%d]", i), "%v", err)
			}
		}
		if s.Prefix == "" {
			bad("prefix", "the election prefix is required")
		}
		if s.DSN != "" || s.Table != "" {
			bad("dsn", "dsn and table are for kind postgres")
		}
		if len(s.Servers) > 0 || s.Path != "" {
			bad("servers", "servers and path are for kind zookeeper")
		}
	case "zookeeper":
		s.validateZooKeeper(bad)
	default:
		bad("kind", "must be postgres, etcd or zookeeper, got %q", s.Kind)
	}
	return errs
}

// validateZooKeeper checks the keys of kind zookeeper.
func (s *EpochSource) validateZooKeeper(bad func(field, format string, args ...any)) {
	if len(s.Servers) == 0 {
		bad("servers", "at least one host:port is required")
	}
	for i, a := range s.Servers {
		if err := checkAddr(a); err != nil {
			bad(fmt.Sprintf("servers[%d]", i), "%v", err)
		}
	}
	if s.Path == "" {
		bad("path", "the election's parent znode is required")
	} else if msg := zooKeeperPath(s.Path); msg != "" {
		bad("path", "%s, got %q", msg, s.Path)
	}
	if s.DSN != "" || s.Table != "" {
		bad("dsn", "dsn and table are for kind postgres")
	}
	if len(s.Endpoints) > 0 || s.Prefix != "" {
		bad("endpoints", "endpoints and prefix are for kind etcd")
	}
}

// zooKeeperPath says what is wrong with an election path, or returns "":
// it must be absolute and below the root, without a trailing slash, empty,
// . or .. segments, control characters or braces other than {resource}
// (ZooKeeper refuses such paths, and no request should find out).
func zooKeeperPath(p string) string {
	sample := strings.ReplaceAll(p, ZooKeeperResource, "x")
	switch {
	case !strings.HasPrefix(p, "/") || p == "/":
		return "must be an absolute znode path below the root"
	case strings.ContainsAny(sample, "{}"):
		return "must not hold placeholders other than " + ZooKeeperResource
	case strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }) >= 0:
		return "must not hold control characters"
	}
	for _, seg := range strings.Split(sample[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "must not have empty, . or .. segments (nor a trailing /)"
		}
	}
	return ""
}
