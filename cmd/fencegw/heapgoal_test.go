package main

import "testing"

// TestRaiseHeapGoal: a floor unless the operator tunes the collector.
func TestRaiseHeapGoal(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if b := raiseHeapGoal(); len(b) != heapFloor {
		t.Fatalf("no tuning set: a floor of %d bytes, want %d", len(b), heapFloor)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			if b := raiseHeapGoal(); b != nil {
				t.Fatalf("%s set: a floor of %d bytes, want none", env, len(b))
			}
		})
	}
}
