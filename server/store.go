package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/etcdstore"
	"github.com/fencegw/fencegw/tokens/pgstore"
)

// openStore opens the store a config's store setting names; clock is the
// gateway's wall clock (see tokens.Clock). An embedded store opens as
// openEmbedded says.
func openStore(ctx context.Context, c config.Config, clock tokens.Clock, log *slog.Logger) (tokens.Store, error) {
	store := c.Store
	switch config.KindOf(store) {
	case config.StorePostgres:
		s, err := pgstore.Open(ctx, store)
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err)
		}
		return s, nil
	case config.StoreEtcd:
		u, err := config.ParseEtcdURL(store)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: u.Endpoints, Prefix: u.Prefix,
			Username: u.Username, Password: u.Password, Clock: clock})
		if err != nil {
			return nil, fmt.Errorf("open etcd store: %w", err)
		}
		return s, nil
	default:
		return openEmbedded(c, clock, log)
	}
}

// keptKeyPath is the file in which a generated signing key is kept beside
// the embedded store file at store.
func keptKeyPath(store string) string { return store + ".signing-key.pem" }

// LostStoreError reports an embedded store file that is missing while the
// signing key kept beside it is not: the store was lost, and a new one
// would grant epochs again from 1 that tokens signed with that key already
// carry. Starting with config.Config.NewStore set acknowledges the loss.
type LostStoreError struct {
	Path    string // the missing store file
	KeyPath string // the signing key kept beside it
}

func (e *LostStoreError) Error() string {
	return fmt.Sprintf("store file %s is missing, but the signing key kept beside it (%s) is not: the store was lost, "+
		"and a new one would grant epochs again from 1 that tokens signed with that key already carry. "+
		"Restore %s from a backup (a copy taken while fencegw was stopped); only if there is none, "+
		"start once with --new-store, which creates a new store and rotates the signing key", e.Path, e.KeyPath, e.Path)
}

// openEmbedded opens the embedded store file c.Store (see boltstore.Open),
// creating it only when it does not exist, and then with a WARN log naming
// it. A missing file beside a kept signing key is a *LostStoreError unless
// c.NewStore acknowledges a new store; the kept key is then retired (renamed
// aside, never loaded again), so that a new key is generated and tokens the
// old one signed no longer verify.
func openEmbedded(c config.Config, clock tokens.Clock, log *slog.Logger) (tokens.Store, error) {
	path := c.Store
	_, err := os.Stat(path)
	switch {
	case err == nil:
		if c.NewStore {
			log.Warn("the store file exists: --new-store has no effect; remove it from the command line", "path", path)
		}
		return openFile(path, clock)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	key := keptKeyPath(path)
	switch _, err := os.Stat(key); {
	case err == nil:
		if !c.NewStore {
			return nil, &LostStoreError{Path: path, KeyPath: key}
		}
		retired := fmt.Sprintf("%s.retired-%s", key, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := os.Rename(key, retired); err != nil {
			return nil, fmt.Errorf("new store %s: retire the signing key kept beside the lost one: %w", path, err)
		}
		log.Warn("new store: the signing key kept beside the lost store is retired; tokens it signed no longer verify",
			"key", key, "retired_as", retired)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open store %s: signing key beside it: %w", path, err)
	}
	if c.NewStore && c.Signing.KeyFile != "" {
		log.Warn("new store: signing.key_file is not rotated; tokens it signed before the store was lost verify again "+
			"until it is replaced", "key_file", c.Signing.KeyFile)
	}
	log.Warn("creating a new store file: epochs start from 1; if a store was kept here before, stop and restore it from a backup", "path", path)
	return openFile(path, clock)
}

// openFile opens the embedded store file at path; a file it refuses gets
// the last resort added to its error.
func openFile(path string, clock tokens.Clock) (tokens.Store, error) {
	s, err := boltstore.OpenClock(path, clock)
	if fe := (*boltstore.FileError)(nil); errors.As(err, &fe) {
		return nil, fmt.Errorf("%w; only if there is none, move the file aside and start once with --new-store "+
			"(epochs start again from 1, and a signing key kept beside the file is rotated)", err)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}
