package docs_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/test/internal/repo"
)

// decision is the header block of one docs/decisions/NNNN-title.md.
type decision struct {
	file       string
	id         int
	status     string
	area       string
	supersedes []int
	amends     []int
	amendedBy  []int
}

var (
	decisionFile = regexp.MustCompile(`^(\d{4})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$`)
	statusValue  = regexp.MustCompile(`^(accepted|amended by D\d+(?:, D\d+)*|superseded by D\d+)$`)
	decisionRef  = regexp.MustCompile(`\bD(\d+)\b`)
	areas        = []string{"auth", "forms", "operator", "platform", "testing", "sdk", "cli"}
)

// TestDecisions_EveryFileIsIndexedWithItsStatus holds docs/decisions/ to what its README promises: each
// decision is a file NNNN-title.md whose heading is "# DN. …" with N its number, with a Status line
// of the allowed values and one of the areas, listed in the README's index with the same status; and
// "amends", "amended by", "supersedes" and "superseded by" are said on both sides.
func TestDecisions_EveryFileIsIndexedWithItsStatus(t *testing.T) {
	dir := repo.Path(t, "docs", "decisions")
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int]*decision{}
	files := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == "README.md" {
			continue
		}
		m := decisionFile.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("docs/decisions/%s: a decision is named NNNN-short-kebab-title.md (NNNN its D number, four digits)", name)
			continue
		}
		files++
		d, err := readDecision(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("docs/decisions/%s: %v", name, err)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n != d.id {
			t.Errorf("docs/decisions/%s: its heading says D%d, its name %s", name, d.id, m[1])
		}
		if other, ok := byID[d.id]; ok {
			t.Errorf("docs/decisions/%s and %s both are D%d: take the next free number", other.file, name, d.id)
		}
		byID[d.id] = d
		row := indexRow(string(index), name)
		switch {
		case row == nil:
			t.Errorf("docs/decisions/%s is not in docs/decisions/README.md: add a row `| D%d | [title](%s) | %s |` "+
				"to the table of its area (%s)", name, d.id, name, d.status, d.area)
		case row[len(row)-1] != d.status:
			t.Errorf("docs/decisions/README.md gives D%d the status %q, its file %q", d.id, row[len(row)-1], d.status)
		}
	}
	if files < 46 {
		t.Fatalf("only %d decision files in docs/decisions/; there were 46 when this test was written, and a "+
			"decision's file stays when it is superseded", files)
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		d := byID[id]
		for _, err := range d.links(byID) {
			t.Errorf("docs/decisions/%s: %v", d.file, err)
		}
	}
}

// readDecision reads a decision's heading and the header block under it ("- Status: …" lines up to the
// first paragraph).
func readDecision(path string) (*decision, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	m := regexp.MustCompile(`^# D(\d+)\. \S`).FindStringSubmatch(lines[0])
	if m == nil {
		return nil, fmt.Errorf(`the first line must be the heading "# DN. What was decided", not %q`, lines[0])
	}
	d := &decision{file: filepath.Base(path)}
	d.id, _ = strconv.Atoi(m[1])
	fields := map[string]string{}
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "" && len(fields) == 0 {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "- "), ": ")
		if !strings.HasPrefix(line, "- ") || !ok {
			break
		}
		fields[key] = strings.TrimSpace(value)
	}
	d.status, d.area = fields["Status"], fields["Area"]
	switch {
	case d.status == "":
		return nil, fmt.Errorf(`no "- Status: …" line in the header block under the heading`)
	case !statusValue.MatchString(d.status):
		return nil, fmt.Errorf(`status %q: it is "accepted", "amended by DN[, DM…]" or "superseded by DN"`, d.status)
	case !slices.Contains(areas, d.area):
		return nil, fmt.Errorf(`area %q: "- Area: " is one of %s`, d.area, strings.Join(areas, ", "))
	}
	d.supersedes = refs(fields["Supersedes"])
	d.amends = refs(fields["Amends"])
	d.amendedBy = refs(fields["Amended by"])
	return d, nil
}

// links checks that the decision's links to others agree with its status and with the other side.
func (d *decision) links(byID map[int]*decision) []error {
	var errs []error
	other := func(id int) *decision {
		o, ok := byID[id]
		if !ok {
			errs = append(errs, fmt.Errorf("names D%d, which has no file", id))
		}
		return o
	}
	status, byList, _ := strings.Cut(d.status, " by ")
	switch status {
	case "amended":
		if !slices.Equal(refs(byList), d.amendedBy) {
			errs = append(errs, fmt.Errorf("the status says amended by %v, the Amended by line %v", refs(byList), d.amendedBy))
		}
	case "superseded":
		if o := other(refs(byList)[0]); o != nil && !slices.Contains(o.supersedes, d.id) {
			errs = append(errs, fmt.Errorf("superseded by D%d, whose Supersedes line does not name D%d", o.id, d.id))
		}
	}
	for _, id := range d.amendedBy {
		if o := other(id); o != nil && !slices.Contains(o.amends, d.id) {
			errs = append(errs, fmt.Errorf("amended by D%d, whose Amends line does not name D%d", id, d.id))
		}
	}
	for _, id := range d.amends {
		if o := other(id); o != nil && !slices.Contains(o.amendedBy, d.id) {
			errs = append(errs, fmt.Errorf("amends D%d, whose Amended by line does not name D%d", id, d.id))
		}
	}
	for _, id := range d.supersedes {
		if o := other(id); o != nil && o.status != fmt.Sprintf("superseded by D%d", d.id) {
			errs = append(errs, fmt.Errorf("supersedes D%d, whose status is %q, not \"superseded by D%d\"", id, o.status, d.id))
		}
	}
	return errs
}

// refs returns the decision numbers a header value names, in order ("[D44](0044-….md), [D45](…)").
func refs(value string) []int {
	var ids []int
	for _, m := range decisionRef.FindAllStringSubmatch(value, -1) {
		id, _ := strconv.Atoi(m[1])
		ids = append(ids, id)
	}
	return ids
}

// indexRow returns the cells of the index's table row that links to file, or nil.
func indexRow(index, file string) []string {
	for line := range strings.SplitSeq(index, "\n") {
		if strings.HasPrefix(line, "|") && strings.Contains(line, "]("+file+")") {
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), " | ") {
				cells = append(cells, strings.TrimSpace(c))
			}
			return cells
		}
	}
	return nil
}
