package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens/boltstore"
)

// mustRefuse fails t unless err is a *boltstore.FileError for path
// wrapping want, whose message names the file and the way to restore it.
func mustRefuse(t *testing.T, err error, path string, want error) {
	t.Helper()
	var fe *boltstore.FileError
	if !errors.As(err, &fe) || fe.Path != path || !errors.Is(err, want) {
		t.Fatalf("Open = %v, want a *FileError for %s wrapping %q", err, path, want)
	}
	// It names the file and the way to restore it, and reads as a
	// finding, not a crash.
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "backup") || strings.Contains(msg, "panic") {
		t.Fatalf("the error does not name the file and the way to restore it: %s", msg)
	}
}

func TestOpenEmptyFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := boltstore.Open(path)
	mustRefuse(t, err, path, boltstore.ErrEmptyFile)
	if info, err := os.Stat(path); err != nil || info.Size() != 0 {
		t.Fatalf("the refused file was changed: %v, %v", info, err)
	}
}

// populated creates a store at path with some high-water marks, leases
// and audit, and closes it; it returns the file's size in pages.
func populated(t *testing.T, path string) int {
	t.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.Advance(context.Background(), fmt.Sprintf("resource-%03d-%s", i, strings.Repeat("x", 40)), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.Size()) / os.Getpagesize()
}

// copyFile copies the file src to a new file in a temporary directory and
// returns its path.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fencegw.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// overwrite writes fill over n bytes of path at off.
func overwrite(t *testing.T, path string, off int64, n int, fill byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(strings.Repeat(string([]byte{fill}), n)), off); err != nil {
		t.Fatal(err)
	}
}

// TestOpenCorruptPagesRefused corrupts each page of a store in turn (and
// all of them at once, and the meta pages): Open either finds the store
// sound (a page no longer in use) or refuses it with a *FileError; it
// never panics, and a refused file is left unlocked.
func TestOpenCorruptPagesRefused(t *testing.T) {
	ps := os.Getpagesize()
	golden := filepath.Join(t.TempDir(), "golden.db")
	pages := populated(t, golden)
	refused := 0
	for _, fill := range []byte{0x00, 0xa5} {
		for page := 2; page < pages; page++ {
			path := copyFile(t, golden)
			overwrite(t, path, int64(page*ps), ps, fill)
			s, err := boltstore.Open(path)
			if err == nil {
				s.Close()
				continue
			}
			refused++
			mustRefuse(t, err, path, boltstore.ErrCorrupt)
			// Refused again, not "in use": the failed Open let go of the lock.
			_, err = boltstore.Open(path)
			mustRefuse(t, err, path, boltstore.ErrCorrupt)
		}
	}
	if refused == 0 {
		t.Fatalf("no corrupt page of %d was found", pages)
	}
	for _, c := range []struct {
		name string
		off  int64
		n    int
		fill byte
	}{
		{"every page after the metas", int64(2 * ps), (pages - 2) * ps, 0xa5},
		{"both meta pages", 0, 2 * ps, 0xa5},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := copyFile(t, golden)
			overwrite(t, path, c.off, c.n, c.fill)
			_, err := boltstore.Open(path)
			mustRefuse(t, err, path, boltstore.ErrCorrupt)
		})
	}
}

func TestOpenNotAStoreRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a bbolt file\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := boltstore.Open(path)
	mustRefuse(t, err, path, boltstore.ErrCorrupt)
}

// TestOpenTruncatedRefused: a store file cut short anywhere is refused
// with a *FileError naming it (truncated, or corrupt when even its meta
// pages are gone), or still opens when the cut removed nothing its
// metadata spans — never a crash: bbolt maps the length its metadata
// names, and reading past the file's end is a SIGBUS, not an error.
func TestOpenTruncatedRefused(t *testing.T) {
	ps := os.Getpagesize()
	golden := filepath.Join(t.TempDir(), "golden.db")
	pages := populated(t, golden)
	truncated := 0
	for size := int64(1); size < int64(pages*ps); size += int64(ps / 2) {
		path := copyFile(t, golden)
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		s, err := boltstore.Open(path)
		if err == nil {
			s.Close()
			continue
		}
		var fe *boltstore.FileError
		if !errors.As(err, &fe) || fe.Path != path || !strings.Contains(err.Error(), "restore") {
			t.Fatalf("truncated to %d bytes: %v, want a *FileError naming %s and the way to restore it", size, err, path)
		}
		if errors.Is(err, boltstore.ErrTruncated) {
			truncated++
		}
	}
	if truncated == 0 {
		t.Fatalf("no cut of a %d-page file was found truncated", pages)
	}
}

// TestOpenDirectoryRefused: a directory where the store file should be is
// named as such, not as a corrupt file.
func TestOpenDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := boltstore.Open(dir)
	if err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Open(a directory) = %v, want an error saying it is a directory", err)
	}
}
