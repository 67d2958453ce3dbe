//go:build race

package auth_test

// raceEnabled: the race detector slows every request several times; load-shaped tests scale down.
const raceEnabled = true
