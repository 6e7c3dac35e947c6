//go:build unix

package server

import (
	"fmt"
	"os"
	"slices"
	"syscall"
)

// keyFileExposure says who besides this process's user may read or write
// the file at path ("" when no one): every user, when any permission bit
// for others is set; a group, when a group bit is set and the file's group
// is none of this process's (a group of its own, as a Kubernetes Secret
// mounted with fsGroup has, is the process's to share).
func keyFileExposure(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("check permissions: %w", err)
	}
	mode := fi.Mode().Perm()
	if mode&0o007 != 0 {
		return fmt.Sprintf("is readable by every user (mode %04o)", mode), nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if mode&0o070 != 0 && ok && !inGroup(int(st.Gid)) {
		return fmt.Sprintf("is readable by group %d, which this process is not in (mode %04o)", st.Gid, mode), nil
	}
	return "", nil
}

// inGroup reports whether gid is this process's effective group or one of
// its supplementary groups.
func inGroup(gid int) bool {
	if os.Getegid() == gid {
		return true
	}
	groups, err := os.Getgroups()
	return err == nil && slices.Contains(groups, gid)
}
