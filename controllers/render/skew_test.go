package render

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/formsservice/formsservice/services/platform/config"
)

func TestImageRelease_FromTheTagOnly(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/formsservice/formsservice:0.1.0":                             "0.1",
		"ghcr.io/formsservice/formsservice:v0.2.3":                            "0.2",
		"registry.example:5000/formsservice:1.4":                              "1.4",
		"registry.example:5000/formsservice:1.4.2-rc.1":                       "1.4",
		"formsservice:0.1.3@sha256:" + strings.Repeat("a", 64):                "0.1",
		"ghcr.io/formsservice/formsservice:latest":                            "",
		"ghcr.io/formsservice/formsservice@sha256:" + strings.Repeat("b", 64): "",
		"registry.example:5000/formsservice":                                  "",
		"registry.example/formsservice:next":                                  "",
		"registry.example/formsservice:0.1.x":                                 "",
	} {
		r, ok := ImageRelease(image)
		got := ""
		if ok {
			got = r.String()
		}
		if got != want {
			t.Errorf("ImageRelease(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestSkew_SupportsItsOwnReleaseAndThePreviousOne(t *testing.T) {
	for op, want := range map[string]string{"0.1.0": "[0.1]", "0.2.5": "[0.1 0.2]", "1.3.0": "[1.2 1.3]", "2.0.0": "[2.0]"} {
		var got []string
		for _, r := range (Skew{Operator: op}).Supported() {
			got = append(got, r.String())
		}
		if s := "[" + strings.Join(got, " ") + "]"; s != want {
			t.Errorf("operator %s supports %s, want %s", op, s, want)
		}
	}
}

// An operator of 0.2 with a key 0.2 introduced: the previous release's image gets the configuration
// only without that key; an image of an unsupported release never; an image with no release in its tag
// is not checked.
func TestSkew_Check(t *testing.T) {
	s := Skew{Operator: "0.2.1", Keys: []KeySince{{Path: "forms.declared", Since: Release{0, 2}}}}
	without := map[string]string{"forms.yaml": "# header\nforms:\n  rateLimitPerMinute: 30\n", "auth.yaml": "auth: {}\n"}
	with := map[string]string{"forms.yaml": "forms:\n  declared:\n  - id: apply\n    fields:\n    - {name: cv, type: file}\n"}
	for _, tc := range []struct {
		image string
		files map[string]string
		want  string // "" for no refusal
	}{
		{"ghcr.io/formsservice/formsservice:0.2.0", with, ""},
		{"ghcr.io/formsservice/formsservice:0.1.9", without, ""},
		{"ghcr.io/formsservice/formsservice:0.1.9", with, "the configuration holds forms.declared, which release 0.1 (the services' image ghcr.io/formsservice/formsservice:0.1.9) does not read: release 0.2 introduced it"},
		{"ghcr.io/formsservice/formsservice:0.3.0", without, "is release 0.3; this operator (0.2.1) renders configuration for releases 0.1 and 0.2 only"},
		{"ghcr.io/formsservice/formsservice:0.0.4", without, "is release 0.0; this operator (0.2.1)"},
		{"ghcr.io/formsservice/formsservice:1.2.0", without, "is release 1.2"},
		{"registry.example/formsservice:next", with, ""},
	} {
		err := s.Check(tc.image, tc.files)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.image, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.image, err, tc.want)
		}
	}
	// A key below the one named counts (the files of 0.2 nest under forms.declared).
	nested := Skew{Operator: "0.2.0", Keys: []KeySince{{Path: "forms.declared.fields.maxSize", Since: Release{0, 2}}}}
	if err := nested.Check("x/formsservice:0.1.0", map[string]string{"f": "forms: {declared: [{fields: [{maxSize: 5}]}]}"}); err == nil {
		t.Error("a key inside a list was not found")
	}
	if err := nested.Check("x/formsservice:0.1.0", with); err != nil {
		t.Errorf("a sibling key refused: %v", err)
	}
}

// Every key the services read is known with its release: the keys of the first release are in
// testdata/config-keys-0.1.txt, and every later one in KeysSince. A key added to
// services/platform/config without its release fails here (set FORMSSERVICE_UPDATE_KEYS=1 only to
// write the first release's list, never for a later key).
func TestConfigKeys_EveryKeyIsKnownWithItsRelease(t *testing.T) {
	keys := map[string]bool{}
	structKeys("", reflect.TypeFor[config.Config](), keys)
	all := slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	})
	path := filepath.Join("testdata", "config-keys-0.1.txt")
	if os.Getenv("FORMSSERVICE_UPDATE_KEYS") == "1" {
		if err := os.WriteFile(path, []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, k := range strings.Fields(string(b)) {
		known[k] = true
	}
	for _, k := range KeysSince {
		if known[k.Path] {
			t.Errorf("%s is in the first release's keys and in KeysSince (%s)", k.Path, k.Since)
		}
		known[k.Path] = true
	}
	for _, k := range all {
		if !known[k] {
			t.Errorf("the services read %s, which is neither a key of release %s (testdata/config-keys-0.1.txt) nor in KeysSince: add it to KeysSince with the release that introduces it", k, FirstRelease)
		}
	}
	if len(all) < 100 {
		t.Fatalf("only %d keys found: the walk of config.Config is broken", len(all))
	}
}

// structKeys adds the dotted path of every JSON key of t to out, through structs, pointers, slices and
// maps' values; a type that marshals itself (a duration) is a leaf.
func structKeys(prefix string, t reflect.Type, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(reflect.TypeFor[json.Marshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Marshaler]()) {
		return
	}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			structKeys(prefix, f.Type, out)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		out[p] = true
		structKeys(p, f.Type, out)
	}
}

// The chart runs the operator with the services' image of its appVersion: the operator's release is
// that version.
func TestOperatorVersion_IsTheChartsAppVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "formsservice-operator", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != OperatorVersion {
		t.Fatalf("chart appVersion %q, OperatorVersion %q", chart.AppVersion, OperatorVersion)
	}
	if _, ok := ParseRelease(OperatorVersion); !ok {
		t.Fatalf("OperatorVersion %q is no release", OperatorVersion)
	}
}

// What the operator renders today passes its own rule for an image of its own release.
func TestSkew_TheRenderedConfigurationPassesForTheOperatorsOwnRelease(t *testing.T) {
	cm, err := ConfigMap(base(), Inputs{Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	if err := DefaultSkew().Check("ghcr.io/formsservice/formsservice:"+OperatorVersion, cm.Data); err != nil {
		t.Fatal(err)
	}
}
