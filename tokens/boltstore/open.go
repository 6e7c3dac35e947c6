package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrEmptyFile means the store file exists but holds no bytes. bbolt would
// start such a file afresh, so every epoch would be granted again from 1;
// Open refuses it instead.
var ErrEmptyFile = errors.New("the file is empty (0 bytes), so it is not a store fencegw wrote")

// ErrCorrupt means the store file is not a consistent bbolt file: its
// pages fail bbolt's consistency check, or bbolt panicked reading them.
var ErrCorrupt = errors.New("the file is corrupt")

// maxCheckErrors bounds how many of the consistency check's findings a
// *FileError quotes.
const maxCheckErrors = 3

// FileError reports a store file that Open refuses to use as it is: Err is
// ErrEmptyFile or wraps ErrCorrupt. Its message names the file and says how
// to restore it.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("store file %s: %v; restore the file from a backup (a copy taken while fencegw was stopped)",
		e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// verify refuses an existing file at path that is empty, shorter than its
// metadata says (see checkLength), or whose pages fail bbolt's consistency
// check, before it is opened for writing: it
// opens the file read-only (which leaves the free list unread) and runs the
// check, in which bbolt recovers its own panics. Nothing is left open or
// locked when it returns. An absent file passes: Open creates it.
func verify(path string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case info.IsDir():
		return fmt.Errorf("open store %s: it is a directory, not a store file", path)
	case info.Mode().IsRegular() && info.Size() == 0:
		return &FileError{Path: path, Err: ErrEmptyFile}
	case info.Mode().IsRegular():
		if err := checkLength(path, info.Size()); err != nil {
			return err
		}
	}
	db, err := openDB(path, bolt.Options{Timeout: LockTimeout, ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return checkDB(db, path)
}

// openDB opens path with bbolt, turning a panic on corrupt pages into a
// *FileError wrapping ErrCorrupt. (After verify such a panic is not
// expected; should one happen, the file stays locked until the process
// exits, as bbolt's memory map keeps it open.)
func openDB(path string, o bolt.Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &FileError{Path: path, Err: fmt.Errorf("%w: bbolt: %v", ErrCorrupt, r)}
		}
	}()
	return bolt.Open(path, 0o600, &o)
}

// openError is the error of Open for a failure err of opening path.
func openError(path string, err error) error {
	var fe *FileError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("open store %s: file is in use by another process: %w", path, err)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		return &FileError{Path: path, Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
	}
	return fmt.Errorf("open store %s: %w", path, err)
}

// checkDB runs bbolt's consistency check over every page of db (the store
// is small: high-water marks, lease records, bounded audit and idempotency
// records) and returns a *FileError wrapping ErrCorrupt quoting its first
// findings, or nil.
func checkDB(db *bolt.DB, path string) error {
	var found []error
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() { // drained whole: the check's goroutine ends
			if len(found) < maxCheckErrors {
				found = append(found, finding(err))
			}
		}
		return nil
	})
	if err != nil {
		return &FileError{Path: path, Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
	}
	if len(found) > 0 {
		return &FileError{Path: path, Err: fmt.Errorf("%w: %w", ErrCorrupt, errors.Join(found...))}
	}
	return nil
}

// finding is one error of bbolt's consistency check as a *FileError quotes
// it: a panic the check recovered reads as bbolt's finding, not as a crash.
func finding(err error) error {
	if msg, ok := strings.CutPrefix(err.Error(), "panic: "); ok {
		return errors.New("bbolt: " + msg)
	}
	return err
}
