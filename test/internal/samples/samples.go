// Package samples reads config/samples the way a platform team applies it, for the tests that run the
// operator (test/chart in envtest, test/e2e on kind).
package samples

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/formsservice/formsservice/test/internal/repo"
)

// Load returns every object of config/samples (the kustomization file excepted), with namespace set
// where the sample leaves it empty. It fails the test when the folder holds no FormsService.
func Load(t testing.TB, namespace string) []*unstructured.Unstructured {
	t.Helper()
	files, _ := filepath.Glob(repo.Path(t, "config", "samples", "*.yaml"))
	var objs []*unstructured.Unstructured
	found := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := apiyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			u := &unstructured.Unstructured{Object: obj}
			if len(obj) == 0 || u.GetKind() == "Kustomization" {
				continue
			}
			if u.GetNamespace() == "" {
				u.SetNamespace(namespace)
			}
			found = found || u.GetKind() == "FormsService"
			objs = append(objs, u)
		}
	}
	if !found {
		t.Fatal("config/samples holds no FormsService")
	}
	return objs
}

// ReferencedSecrets returns the Secrets a FormsService names in a *SecretRef ({name, key}) — the ones
// its sample tells the platform team to create first — each holding a placeholder for every key.
func ReferencedSecrets(fs *unstructured.Unstructured) []*corev1.Secret {
	data := map[string]map[string][]byte{}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch n := v.(type) {
		case map[string]any:
			name, _ := n["name"].(string)
			k, _ := n["key"].(string)
			if strings.HasSuffix(strings.ToLower(key), "secretref") && name != "" && k != "" {
				if data[name] == nil {
					data[name] = map[string][]byte{}
				}
				data[name][k] = []byte("placeholder-" + k)
			}
			for kk, vv := range n {
				walk(kk, vv)
			}
		case []any:
			for _, vv := range n {
				walk(key, vv)
			}
		}
	}
	walk("spec", fs.Object["spec"])
	var out []*corev1.Secret
	for name, d := range data {
		out = append(out, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fs.GetNamespace(), Name: name}, Data: d})
	}
	return out
}
