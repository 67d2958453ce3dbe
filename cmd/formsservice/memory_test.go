package main

import (
	"runtime/debug"
	"testing"
)

// The auth process's soft memory limit is its hashing pool's memory plus heapBase, unless GOMEMLIMIT
// (the operator's, from the container's limit) is lower already.
func TestLimitMemoryForHashing(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	const pool = 2 * 19456 << 10

	debug.SetMemoryLimit(1 << 40) // as good as none
	if got := limitMemoryForHashing(pool); got != heapBase+pool || debug.SetMemoryLimit(-1) != heapBase+pool {
		t.Errorf("without a lower limit: %d (runtime %d), want %d", got, debug.SetMemoryLimit(-1), heapBase+pool)
	}

	debug.SetMemoryLimit(48 << 20) // GOMEMLIMIT below the pool's need: the operator's word stands
	if got := limitMemoryForHashing(pool); got != 48<<20 || debug.SetMemoryLimit(-1) != 48<<20 {
		t.Errorf("under a lower GOMEMLIMIT: %d (runtime %d), want it kept at %d", got, debug.SetMemoryLimit(-1), 48<<20)
	}
}
