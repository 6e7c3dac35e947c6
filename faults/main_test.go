package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// binary is the fencegw binary the suite runs, built for this test run
// with the race detector — but as shipped, without it, for a soak, whose
// memory is measured. leaderBinary is the test leader process
// (internal/testutil/testleader).
var binary, leaderBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fencegw-faults")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "fencegw")
	args := []string{"build", "-race", "-o", binary, "../cmd/fencegw"}
	if os.Getenv(envSoak) != "" {
		args = slices.Delete(args, 1, 2)
	}
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build fencegw:", err)
		os.Exit(1)
	}
	leaderBinary = filepath.Join(dir, "testleader")
	build = exec.Command("go", "build", "-race", "-o", leaderBinary, "../internal/testutil/testleader")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build testleader:", err)
		os.Exit(1)
	}
	code := m.Run()
	testpg.CloseShared()
	os.RemoveAll(dir)
	os.Exit(code)
}
