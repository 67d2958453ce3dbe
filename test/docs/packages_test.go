// Package docs_test keeps the contributor docs true to the tree: docs/architecture.md's Packages table
// names every package folder of the module and no folder that is gone, every decision in
// docs/decisions/ is in its index with a Status, and every relative link in docs/ and README.md leads
// to a file (and, for a heading, to a heading that exists).
package docs_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/test/internal/repo"
)

// TestPackagesTable_NamesEveryPackageFolder fails when a folder of the module with Go code has no row in
// docs/architecture.md's Packages table: a folder is named when it is in backticks in the first column
// of a row (alone or beside others: "`internal/testmail`, `internal/testbrowser`").
func TestPackagesTable_NamesEveryPackageFolder(t *testing.T) {
	root := repo.Root(t)
	named := packagesTable(t, root)
	var missing []string
	for _, dir := range packageFolders(t, root) {
		if !named[dir] {
			missing = append(missing, dir)
		}
	}
	if len(missing) > 0 {
		t.Errorf("these package folders (non-test .go files) have no row: add a row to docs/architecture.md's Packages table "+
			"for each, the folder in backticks in the first column and its one job in the second (or add it in backticks "+
			"to the first column of the row of its siblings):\n\t%s", strings.Join(missing, "\n\t"))
	}
}

// TestPackagesTable_NamesNoFolderThatIsGone fails for a row whose first column names a folder that no
// longer exists or holds no Go code (moved, renamed or deleted): the table must not send a reader to a
// package that is not there. Folders under sdk/ are the npm package's and need no Go.
func TestPackagesTable_NamesNoFolderThatIsGone(t *testing.T) {
	root := repo.Root(t)
	named := packagesTable(t, root)
	for _, dir := range slices.Sorted(maps.Keys(named)) {
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir)))
		switch {
		case err != nil || !info.IsDir():
			t.Errorf("docs/architecture.md's Packages table names `%s`, which is not a folder of the repository "+
				"(moved or deleted?): fix or remove its row", dir)
		case dir == "sdk" || strings.HasPrefix(dir, "sdk/"):
		case !hasGoFiles(t, filepath.Join(root, filepath.FromSlash(dir))):
			t.Errorf("docs/architecture.md's Packages table names `%s`, which holds no .go file any more "+
				"(moved?): fix or remove its row", dir)
		}
	}
}

// packageFolders lists, relative to root and with forward slashes, every folder holding at least one
// non-test .go file that the go tool builds (names starting with "_" or "." are ignored by it). It
// skips testdata, node_modules, bin, hidden folders and folders with a go.mod of their own (another
// module); of sdk/ only the folder itself (the Go package that embeds the built SDK), not the npm
// package's tree below it.
func packageFolders(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.IsDir() || rel == "." {
			return nil
		}
		name := d.Name()
		if name == "testdata" || name == "node_modules" || name == "bin" || strings.HasPrefix(name, ".") ||
			strings.HasPrefix(rel, "sdk/") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
			return filepath.SkipDir
		}
		if hasNonTestGoFiles(t, path) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 30 {
		t.Fatalf("only %d package folders found under %s: the walk no longer sees the module", len(dirs), root)
	}
	return dirs
}

func hasNonTestGoFiles(t *testing.T, dir string) bool {
	return slices.ContainsFunc(goFiles(t, dir), func(name string) bool { return !strings.HasSuffix(name, "_test.go") })
}

func hasGoFiles(t *testing.T, dir string) bool { return len(goFiles(t, dir)) > 0 }

// goFiles lists the .go files of one folder that the go tool reads.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasPrefix(n, "_") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	return names
}

// packagesTable reads the section "## Packages" of docs/architecture.md and returns the folders its rows
// name in backticks in their first column ("`api/v1alpha1`, `controllers/`"), without a trailing slash.
func packagesTable(t *testing.T, root string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Packages\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no section "## Packages"`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	backticked := regexp.MustCompile("`([^`]+)`")
	named := map[string]bool{}
	rows := 0
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 || strings.HasPrefix(cells[1], "---") ||
			strings.TrimSpace(cells[1]) == "package" {
			continue
		}
		rows++
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			named[strings.TrimSuffix(strings.TrimSpace(m[1]), "/")] = true
		}
	}
	if rows < 20 || len(named) < 30 {
		t.Fatalf("docs/architecture.md's Packages table: %d rows naming %d folders read; the table's format is no longer "+
			"what this test reads (| `folder`, `folder` | one job |)", rows, len(named))
	}
	return named
}
