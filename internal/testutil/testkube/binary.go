package testkube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	// EnvBinary names the kube-apiserver binary to run; without it, the
	// one scripts/kube-apiserver.sh caches (see CachedBinary).
	EnvBinary = "FENCEGW_TEST_KUBE_APISERVER"
	// EnvStatus names a file that scripts/test.sh fills when its build of
	// kube-apiserver ends: "ok", or "failed" and the reason. While it is
	// empty and the binary missing, Start waits for the build (up to
	// buildWait) instead of giving up at once.
	EnvStatus = "FENCEGW_TEST_KUBE_STATUS"
	// Version is the kube-apiserver version scripts/kube-apiserver.sh
	// builds by default.
	Version = "v1.34.0"

	buildWait = 40 * time.Minute
)

// CachedBinary returns where scripts/kube-apiserver.sh caches the binary:
// ${FENCEGW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fencegw}/kube-apiserver-<Version>.
func CachedBinary() string {
	cache := os.Getenv("FENCEGW_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(os.Getenv("HOME"), ".cache")
		}
		cache = filepath.Join(base, "fencegw")
	}
	return filepath.Join(cache, "kube-apiserver-"+Version)
}

// Binary returns the kube-apiserver to run: EnvBinary's, else
// CachedBinary. When it is missing and EnvStatus names a status file, it
// waits for the build to end, silently, up to 40 minutes.
func Binary() (string, error) {
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		bin = CachedBinary()
	}
	status := os.Getenv(EnvStatus)
	deadline := time.Now().Add(buildWait)
	for {
		if executable(bin) {
			return bin, nil
		}
		if status == "" {
			return "", fmt.Errorf("no kube-apiserver at %s (build one with scripts/kube-apiserver.sh, or set %s)", bin, EnvBinary)
		}
		b, err := os.ReadFile(status)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("kube-apiserver build status %s: %w", status, err)
		}
		if s := strings.TrimSpace(string(b)); s != "" && !executable(bin) {
			return "", fmt.Errorf("no kube-apiserver at %s: the build reported %q", bin, s)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no kube-apiserver at %s after waiting %v for its build", bin, buildWait)
		}
		time.Sleep(2 * time.Second)
	}
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
