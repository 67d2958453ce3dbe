package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/formsservice/formsservice/test/internal/repo"
)

var (
	// inlineLink matches a Markdown link or image's target: [text](target) or [text](target "title").
	inlineLink = regexp.MustCompile(`\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)`)
	// referenceLink matches a link reference definition: [label]: target.
	referenceLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	codeSpan      = regexp.MustCompile("`+[^`]*`+")
	heading       = regexp.MustCompile(`^#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	fence         = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	scheme        = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	mdLinkText    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// TestDocLinks_EveryRelativeLinkResolves reads every Markdown file under docs/ and README.md, and checks
// that each relative link (not http:, mailto: …) leads to a file or folder of the repository and, when it
// has a #fragment and leads to a Markdown file, that the file has a heading with that anchor (GitHub's:
// lower case, punctuation dropped, spaces as hyphens, "-1", "-2" for repeats). Links in code blocks and
// code spans are not links and are skipped.
func TestDocLinks_EveryRelativeLinkResolves(t *testing.T) {
	root := repo.Root(t)
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		a := headingAnchors(t, path)
		anchorsOf[path] = a
		return a
	}
	checked := 0
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		for n, line := range proseLines(t, file) {
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				targets = append(targets, m[1])
			}
			if m := referenceLink.FindStringSubmatch(line); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) {
					continue
				}
				checked++
				path, fragment, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: the link %q leads to no file (%s)", rel, n+1, target, err)
					continue
				}
				if fragment != "" && strings.HasSuffix(dest, ".md") && !anchors(dest)[fragment] {
					destRel, _ := filepath.Rel(root, dest)
					t.Errorf("%s:%d: the link %q: %s has no heading with the anchor #%s", rel, n+1, target, destRel, fragment)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d relative links checked in %d files: the pattern no longer matches the docs", checked, len(files))
	}
	t.Logf("%d relative links checked in %d files", checked, len(files))
}

// proseLines returns the file's lines with those inside fenced code blocks blanked, so that line numbers
// stay those of the file.
func proseLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	inFence := false
	for i, line := range lines {
		if fence.MatchString(line) {
			inFence = !inFence
			lines[i] = ""
		} else if inFence {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a Markdown file.
func headingAnchors(t *testing.T, path string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(t, path) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// slugify is GitHub's anchor for a heading's text: links and code marks reduced to their text, lower
// case, every character but letters, digits, "_", "-" and spaces dropped, and each space a hyphen.
func slugify(text string) string {
	text = mdLinkText.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
