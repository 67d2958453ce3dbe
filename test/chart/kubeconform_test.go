package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/formsservice/formsservice/test/internal/repo"
)

// kubeconform validates rendered manifests strictly (unknown fields are errors) against offline schemas:
// Kubernetes' own (bin/kubeschemas, from the k8s.io/kubernetes module's OpenAPI document), the Prometheus
// Operator's CRDs (bin/kubeschemas/crds) and ours (generated here from config/crd/bases). A kind without a
// schema is an error, not a skip.
func kubeconform(t *testing.T, rendered string) (string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(file, []byte(rendered), 0o644); err != nil {
		t.Fatal(err)
	}
	schemas := repo.Path(t, "bin", "kubeschemas")
	if _, err := os.Stat(filepath.Join(schemas, "crds", "monitoring.coreos.com")); err != nil {
		t.Fatalf("no offline schemas in %s: `make test` generates them (%s)", schemas, installedBy)
	}
	crdTemplate := "/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json"
	return repo.Output(t, nil, repo.Tool(t, "kubeconform", installedBy),
		"-strict", "-summary", "-kubernetes-version", "1.37.1",
		"-schema-location", schemas,
		"-schema-location", filepath.Join(schemas, "crds")+crdTemplate,
		"-schema-location", ownSchemas(t)+crdTemplate,
		file)
}

var (
	ownSchemasOnce sync.Once
	ownSchemasDir  string
	ownSchemasErr  string
)

// ownSchemas writes the schema of our CRD (config/crd/bases) once per test binary.
func ownSchemas(t *testing.T) string {
	t.Helper()
	ownSchemasOnce.Do(func() {
		dir, err := os.MkdirTemp("", "formsservice-schemas-")
		if err != nil {
			ownSchemasErr = err.Error()
			return
		}
		crds, _ := filepath.Glob(repo.Path(t, "config", "crd", "bases", "*.yaml"))
		if len(crds) == 0 {
			ownSchemasErr = "no CRD in config/crd/bases: run `make manifests`"
			return
		}
		out, err := repo.Output(t, nil, "go", "run", "./hack/kubeschema", "-crd", strings.Join(crds, ","), "-out", dir)
		if err != nil {
			ownSchemasErr = out
			return
		}
		ownSchemasDir = dir
	})
	if ownSchemasErr != "" {
		t.Fatalf("generating the FormsService schema: %s", ownSchemasErr)
	}
	return ownSchemasDir
}

func TestChart_RenderedManifestsAreValidKubernetesObjects(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			out, err := kubeconform(t, mustRender(t, []string{c.values + ".values.yaml"}, c.apiVersions))
			if err != nil {
				t.Fatalf("kubeconform: %v\n%s", err, out)
			}
			if !strings.Contains(out, "Invalid: 0, Errors: 0, Skipped: 0") {
				t.Fatalf("kubeconform did not validate every object:\n%s", out)
			}
		})
	}
}

// The validation above is only worth something if it refuses what the API server would refuse or
// silently drop.
func TestChart_KubeconformRefusesMistakes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"misspelt field in a pass-through value", []string{"--set-json", `extraEnv=[{"name":"A","valueFromm":{}}]`}, "valueFromm"},
		{"misspelt field in the FormsService spec", []string{"--set", "formsService.enabled=true", "--api-versions", formsServiceAPI,
			"--set-json", `formsService.spec={"publicURL":"https://id.example.com","allowedOrigin":["https://a.example.com"]}`}, "allowedOrigin"},
		{"wrong type in a pass-through value", []string{"--set-json", `tolerations=[{"key":"a","tolerationSeconds":"soon"}]`}, "tolerationSeconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := kubeconform(t, mustRender(t, nil, nil, c.args...))
			if err == nil {
				t.Fatalf("kubeconform accepted it:\n%s", out)
			}
			if !strings.Contains(out, c.want) {
				t.Fatalf("kubeconform's error does not name %q:\n%s", c.want, out)
			}
		})
	}
}
