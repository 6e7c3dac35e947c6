package main

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestDeployExampleIsValid keeps deploy/fencegw.yaml loadable.
func TestDeployExampleIsValid(t *testing.T) {
	if _, err := config.Load("../../deploy/fencegw.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestSystemdUnitMatchesBinary checks that the unit's ExecStart uses a
// command and flags the binary accepts.
func TestSystemdUnitMatchesBinary(t *testing.T) {
	f, err := os.Open("../../deploy/systemd/fencegw.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exec string
	for s := bufio.NewScanner(f); s.Scan(); {
		if v, ok := strings.CutPrefix(s.Text(), "ExecStart="); ok {
			exec = v
		}
	}
	args := strings.Fields(exec)
	if len(args) < 2 || !strings.HasSuffix(args[0], "/fencegw") || args[1] != "serve" {
		t.Fatalf("ExecStart = %q, want fencegw serve …", exec)
	}
	// Point --config at the example, as installed to /etc/fencegw.
	for i, a := range args {
		if a == "/etc/fencegw/fencegw.yaml" {
			args[i] = "../../deploy/fencegw.yaml"
		}
	}
	if _, err := loadServeConfig(args[2:], io.Discard); err != nil {
		t.Fatalf("the unit's flags are refused: %v", err)
	}
}
