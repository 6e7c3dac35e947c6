package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// ErrTruncated means the store file is shorter than its own metadata says:
// bbolt maps the whole length its metadata names, and reading past the
// file's end would crash the process (SIGBUS) rather than fail.
var ErrTruncated = errors.New("the file is truncated")

// bbolt's meta page: a 16-byte page header, then magic, version, page size
// (uint32 each), flags, the root bucket (16 bytes), the free list's page,
// the high-water page id, the transaction id and a checksum of what
// precedes it.
const (
	metaMagic      = 0xED0CDAED
	metaOffset     = 16
	metaChecksumAt = metaOffset + 56
	metaLen        = metaChecksumAt + 8
)

// meta is what checkLength reads of one meta page.
type meta struct {
	pageSize uint32
	pgid     uint64 // the file's high-water page id: it spans pgid pages
	txid     uint64
}

// checkLength refuses a file at path of size bytes whose newest valid meta
// page names more pages than the file holds (ErrTruncated), or that has no
// valid meta page at all (ErrCorrupt). It reads only the two meta pages.
func checkLength(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m0, ok0 := readMeta(f, 0)
	off := int64(os.Getpagesize())
	if ok0 {
		off = int64(m0.pageSize)
	}
	m1, ok1 := readMeta(f, off)
	m := m0
	switch {
	case !ok0 && !ok1:
		return &FileError{Path: path, Err: fmt.Errorf("%w: neither meta page is valid (%d bytes)", ErrCorrupt, size)}
	case !ok0 || (ok1 && m1.txid > m0.txid):
		m = m1
	}
	if need := int64(m.pgid) * int64(m.pageSize); size < need {
		return &FileError{Path: path, Err: fmt.Errorf("%w: %d bytes, while its metadata spans %d", ErrTruncated, size, need)}
	}
	return nil
}

// readMeta reads the meta page at off of f, and reports whether it is a
// valid one (magic and checksum).
func readMeta(f *os.File, off int64) (meta, bool) {
	b := make([]byte, metaLen)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return meta{}, false
	}
	le := binary.LittleEndian
	if le.Uint32(b[metaOffset:]) != metaMagic {
		return meta{}, false
	}
	h := fnv.New64a()
	h.Write(b[metaOffset:metaChecksumAt])
	if h.Sum64() != le.Uint64(b[metaChecksumAt:]) {
		return meta{}, false
	}
	m := meta{pageSize: le.Uint32(b[metaOffset+8:]), pgid: le.Uint64(b[metaOffset+40:]), txid: le.Uint64(b[metaOffset+48:])}
	return m, m.pageSize >= 512
}
