package reliability

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityDoc_CitesOnlyTestsThatExist keeps docs/security.md honest: every test it names (`TestX`,
// `FuzzX`, or a prefix ending in "…") is a test function in the tree, so a renamed or deleted test
// cannot leave a promise without its proof.
func TestSecurityDoc_CitesOnlyTestsThatExist(t *testing.T) {
	root := repoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	funcRe := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcRe.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cited := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]*(?:…)?)(?:/[^`]*)?`").FindAllStringSubmatch(string(doc), -1)
	if len(cited) < 40 {
		t.Fatalf("only %d tests cited: the pattern no longer matches the document", len(cited))
	}
	for _, c := range cited {
		name := c[1]
		if prefix, ok := strings.CutSuffix(name, "…"); ok {
			found := false
			for d := range defined {
				if strings.HasPrefix(d, prefix) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("docs/security.md cites %s, and no test starts with %s", name, prefix)
			}
			continue
		}
		if !defined[name] {
			t.Errorf("docs/security.md cites %s, which is not a test in the tree", name)
		}
	}
	t.Logf("%d citations checked against %d test functions", len(cited), len(defined))
}
