package chart_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apiyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/formsservice/formsservice/test/internal/repo"
)

const (
	chartDir    = "charts/formsservice-operator"
	releaseName = "fs"
	releaseNS   = "formsservice-system"
	// installedBy names what installs the chart tools, for the failure message when they are missing.
	installedBy = "make deps-chart"
)

// helmEnv points helm's cache, configuration and data at a scratch folder, so the tests neither read nor
// write the user's helm setup and need no network.
func helmEnv(t testing.TB) []string {
	dir := t.TempDir()
	return []string{
		"HELM_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"HELM_DATA_HOME=" + filepath.Join(dir, "data"),
	}
}

// helm runs bin/helm with extra environment and returns its combined output and error.
func helm(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	return repo.Output(t, append(helmEnv(t), env...), repo.Tool(t, "helm", installedBy), args...)
}

// render runs `helm template` of the chart with the values files (relative to testdata/), extra helm
// arguments and API versions the cluster is said to serve.
func render(t testing.TB, valuesFiles []string, apiVersions []string, extra ...string) (string, error) {
	t.Helper()
	args := []string{"template", releaseName, chartDir, "--namespace", releaseNS}
	for _, f := range valuesFiles {
		args = append(args, "--values", testdataPath(t, f))
	}
	for _, v := range apiVersions {
		args = append(args, "--api-versions", v)
	}
	args = append(args, extra...)
	if testing.Short() { // before the Once below: a skip inside it would leave an empty render behind
		t.Skip("needs helm: not run under -short (make test-fast); make test runs it")
	}
	key := strings.Join(args, "\x00")
	renderCache.mu.Lock()
	r, ok := renderCache.m[key]
	if !ok {
		r = &rendered{}
		renderCache.m[key] = r
	}
	renderCache.mu.Unlock()
	r.once.Do(func() { r.out, r.err = helm(t, nil, args...) })
	return r.out, r.err
}

// renderCache holds each `helm template` output once per test binary: rendering is deterministic (no
// cluster is asked), and the tests render the same values many times over (about 1 s each on a busy
// machine).
var renderCache = struct {
	mu sync.Mutex
	m  map[string]*rendered
}{m: map[string]*rendered{}}

type rendered struct {
	once sync.Once
	out  string
	err  error
}

func mustRender(t testing.TB, valuesFiles []string, apiVersions []string, extra ...string) string {
	t.Helper()
	out, err := render(t, valuesFiles, apiVersions, extra...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	return out
}

func testdataPath(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// manifest is one rendered object and the template it came from.
type manifest struct {
	Source string
	Object map[string]any
}

func (m manifest) kind() string { s, _ := m.Object["kind"].(string); return s }
func (m manifest) name() string { return str(m.Object, "metadata", "name") }

// parse splits helm's output into objects, keeping each "# Source:" line.
func parse(t testing.TB, rendered string) []manifest {
	t.Helper()
	var out []manifest
	for _, doc := range strings.Split("\n"+rendered, "\n---") {
		source := ""
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "# Source: "); ok {
				source = s
				break
			}
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("rendered document from %s is not YAML: %v\n%s", source, err, doc)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, manifest{Source: source, Object: obj})
	}
	return out
}

// find returns the one object of that kind whose name ends with suffix.
func find(t testing.TB, ms []manifest, kind, suffix string) manifest {
	t.Helper()
	var found []manifest
	for _, m := range ms {
		if m.kind() == kind && strings.HasSuffix(m.name(), suffix) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named *%s, found %d", kind, suffix, len(found))
	}
	return found[0]
}

func has(ms []manifest, kind string) bool {
	for _, m := range ms {
		if m.kind() == kind {
			return true
		}
	}
	return false
}

// str walks nested maps and returns the string at the path, or "".
func str(obj map[string]any, path ...string) string {
	v := get(obj, path...)
	s, _ := v.(string)
	return s
}

func get(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// readObjects decodes every object of a (multi-document) YAML file.
func readObjects(t testing.TB, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := apiyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []map[string]any
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj) > 0 {
			objs = append(objs, obj)
		}
	}
}

func toYAML(t testing.TB, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func diffHint(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return fmt.Sprintf("first difference at line %d:\n got: %s\nwant: %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d vs %d lines)", len(g), len(w))
}
