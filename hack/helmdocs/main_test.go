package main

import (
	"strings"
	"testing"
)

func TestParseValues_DocumentedKeysBecomeRows(t *testing.T) {
	rows, err := parseValues([]byte(`
# -- Replaces the name.
nameOverride: ""
image:
  # -- The image.
  # Second line.
  repository: ghcr.io/x/y
  # -- Pull policy.
  pullPolicy: IfNotPresent
# -- Resources, documented as a whole.
resources:
  limits:
    memory: 256Mi
# -- Replicas.
replicaCount: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"nameOverride", "string", `""`, "Replaces the name."},
		{"image.repository", "string", `"ghcr.io/x/y"`, "The image. Second line."},
		{"image.pullPolicy", "string", `"IfNotPresent"`, "Pull policy."},
		{"resources", "object", `{"limits":{"memory":"256Mi"}}`, "Resources, documented as a whole."},
		{"replicaCount", "int", `1`, "Replicas."},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestParseValues_UndocumentedValueIsAnError(t *testing.T) {
	_, err := parseValues([]byte("image:\n  # -- ok\n  tag: x\n  digest: \"\"\n"))
	if err == nil || !strings.Contains(err.Error(), "image.digest") {
		t.Fatalf("err = %v, want one naming image.digest", err)
	}
}

func TestReplaceTable_KeepsTheRestOfTheDocument(t *testing.T) {
	doc := "# Title\n\n" + startMarker + "\nold\n" + endMarker + "\n\nafter\n"
	got, err := replaceTable([]byte(doc), "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Title\n\n" + startMarker + "\n| new |\n" + endMarker + "\n\nafter\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := replaceTable([]byte("no markers"), "x"); err == nil {
		t.Fatal("a document without markers was accepted")
	}
}

func TestEscape_AngleBracketsOutsideCodeOnly(t *testing.T) {
	if got, want := escape("the <release> name, `<release>-x` | y"), "the &lt;release&gt; name, `<release>-x` \\| y"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
