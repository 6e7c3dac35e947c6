package config

import (
	"fmt"
	"strings"

	"github.com/fencegw/fencegw/tokens/source/redissource"
)

// EpochSource names an external election: the truth about who leads a
// route's resource when its leaders bring their own lease.
type EpochSource struct {
	// Kind is postgres (a leader_lease table), etcd (a concurrency
	// Election, whose epoch is the leader key's create revision) or redis
	// (a lock key whose value is the epoch).
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
}

// oneElection reports whether the source reads one election for every
// resource of the route: an etcd election, or a Redis key without
// {resource}.
func (s *EpochSource) oneElection() bool {
	switch s.Kind {
	case "etcd":
		return true
	case "redis":
		return s.Key != "" && !strings.Contains(s.Key, redissource.ResourcePlaceholder)
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
		if len(s.Endpoints) > 0 || s.Prefix != "" {
			bad("endpoints", "endpoints and prefix are for kind etcd")
		}
		if s.Address != "" || s.Key != "" {
			bad("address", "address and key are for kind redis")
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
		if s.Address != "" || s.Key != "" {
			bad("address", "address and key are for kind redis")
		}
	case "redis":
		if s.Address == "" {
			bad("address", "the Redis primary is required (host:port, or a redis:// or rediss:// URL)")
		} else if _, err := redissource.ParseAddress(s.Address); err != nil {
			bad("address", "%v", err)
		}
		if s.DSN != "" || s.Table != "" {
			bad("dsn", "dsn and table are for kind postgres")
		}
		if len(s.Endpoints) > 0 || s.Prefix != "" {
			bad("endpoints", "endpoints and prefix are for kind etcd")
		}
	default:
		bad("kind", "must be postgres, etcd or redis, got %q", s.Kind)
	}
	return errs
}
