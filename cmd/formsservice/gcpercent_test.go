package main

import "testing"

// Only a process that serves auth raises GOGC: the forms process under GOGC=400 peaked at 43 MiB RSS
// under the bench load, 2.8 times the one-SETNX baseline; at Go's default it stays near 33.
func TestGCPercent_RaisedForAuthOnly(t *testing.T) {
	cases := []struct {
		names  []string
		pct    int
		raised bool
	}{
		{[]string{"forms"}, 0, false},
		{[]string{"health"}, 0, false},
		{[]string{"auth"}, 400, true},
		{devOrder, 400, true}, // the dev server runs auth too
	}
	for _, c := range cases {
		if pct, ok := gcPercent(c.names); pct != c.pct || ok != c.raised {
			t.Errorf("gcPercent(%v) = %d, %v; want %d, %v", c.names, pct, ok, c.pct, c.raised)
		}
	}
}
