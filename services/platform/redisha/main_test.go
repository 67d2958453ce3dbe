package redisha_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the tests of sets four at a time, whatever the cores, unless -parallel is given: each
// waits on Sentinel's timers (down-after, the failover timeout) and on replication, not on the CPU (a
// run of the package uses 40 s of CPU in 140 s of wall time), and at go test's default of one per
// core the package was the longest of make test's race step.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", "4"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
