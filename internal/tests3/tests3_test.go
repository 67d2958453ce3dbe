package tests3

import (
	"testing"

	"github.com/formsservice/formsservice/internal/testproc"
)

// `make deps-s3` must install the version the tests look for in bin/, and the node cluster's S3 image
// (hack/node-cluster) must be that same server.
func TestVersion_IsTheOneTheInstallScriptsBuild(t *testing.T) {
	for _, script := range []string{"hack/install-versitygw.sh", "hack/node-cluster/lib.sh"} {
		v, err := testproc.ScriptVersion(script, "VERSITYGW_VERSION")
		if err != nil {
			t.Fatal(err)
		}
		if v != Version {
			t.Errorf("%s builds versitygw %s, the tests run %s", script, v, Version)
		}
	}
}
