//go:build !formsonly

package main

import "runtime/debug"

// heapBase is the Go memory an auth process needs apart from its password-hash memory: its live heap
// under load is a few MB; the rest is room for garbage between collections.
const heapBase = 24 << 20

// limitMemoryForHashing sets the Go runtime's soft memory limit to the password-hash pool's memory
// (poolBytes) plus heapBase, unless GOMEMLIMIT (which the operator sets from the container's memory
// limit) is lower already, and returns the limit in effect.
//
// Why: the pool keeps Concurrency × 19 MiB of hash memory alive, and under GOGC=400 (serve) the
// collector lets the heap grow to five times what is alive before it runs, so a live heap that is
// mostly hash memory would let some 150 MiB of small garbage pile up. The limit makes the collector
// run once the heap reaches it instead; the hash memory holds no pointers, so those collections cost
// little. Below the limit GOGC still governs, which keeps the token endpoint's CPU figure. The figures
// are in docs/auth.md ("Memory").
func limitMemoryForHashing(poolBytes int64) int64 {
	limit := heapBase + poolBytes
	if current := debug.SetMemoryLimit(-1); current < limit {
		return current
	}
	debug.SetMemoryLimit(limit)
	return limit
}
