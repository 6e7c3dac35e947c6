package pgstore_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testleak"
	"github.com/fencegw/fencegw/internal/testpg"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testpg.CloseShared() // first, so that the shared cluster's helpers are gone too
	testleak.Exit(code, 0)
}
