package pgstore_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/fencegw/fencegw/internal/testpg"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testpg.CloseShared()
	// After CloseShared, so that the shared cluster's helpers are gone too.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
