package ui

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

func TestMain(m *testing.M) { testleak.Exit(m.Run(), 5*time.Second) }
