package render

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// The supported skew between the operator and the services' image it renders a configuration for
// (D86, docs/operator.md "Which images an operator runs"): the services parse their file strictly, so a
// key a binary does not know is a crash loop, not a warning.

// OperatorVersion is this operator's release: the chart's appVersion, and the tag of the services'
// image the chart gives it (--service-image). TestOperatorVersion_IsTheChartsAppVersion holds the two
// together.
const OperatorVersion = "0.1.0"

// FirstRelease is the first release: no image older than it exists.
var FirstRelease = Release{0, 1}

// KeySince is a configuration key, by its path in the service's file (dotted, lists left out:
// forms.declared.fields.maxSize), and the release whose services first read it.
type KeySince struct {
	Path  string
	Since Release
}

// KeysSince lists every key that a release after FirstRelease introduced. A key the services read that
// is neither here nor in testdata/config-keys-0.1.txt fails TestConfigKeys_EveryKeyIsKnownWithItsRelease:
// whoever adds one to services/platform/config names its release here. The renderer writes such a key
// only when the spec sets it (the service's own default is its absence).
var KeysSince = []KeySince{}

// Release is a major.minor version.
type Release struct{ Major, Minor int }

func (r Release) String() string { return fmt.Sprintf("%d.%d", r.Major, r.Minor) }

// Before says whether r is older than o.
func (r Release) Before(o Release) bool {
	return r.Major < o.Major || (r.Major == o.Major && r.Minor < o.Minor)
}

var releaseTag = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?$`)

// ParseRelease reads major.minor from a version such as 0.1.0, v0.2, 1.4.2-rc.1.
func ParseRelease(v string) (Release, bool) {
	m := releaseTag.FindStringSubmatch(v)
	if m == nil {
		return Release{}, false
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return Release{}, false
	}
	return Release{major, minor}, true
}

// ImageRelease reads the release from an image's tag (registry/formsservice:0.1.3, …:v0.2.0-debug,
// …:0.1.3@sha256:…). False when the tag names none: latest, a branch, a digest alone.
func ImageRelease(image string) (Release, bool) {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	name := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(name, ":")
	if i < 0 {
		return Release{}, false
	}
	return ParseRelease(name[i+1:])
}

// Skew is the rule an operator of release Operator applies, with the keys the releases introduced.
type Skew struct {
	Operator string
	Keys     []KeySince
}

// DefaultSkew is this operator's rule.
func DefaultSkew() Skew { return Skew{Operator: OperatorVersion, Keys: KeysSince} }

// Supported are the releases whose images the operator renders for: its own and the one before it
// (not before FirstRelease; across a major release, its own only).
func (s Skew) Supported() []Release {
	op, ok := ParseRelease(s.Operator)
	if !ok {
		return nil
	}
	out := []Release{op}
	if prev := (Release{op.Major, op.Minor - 1}); op.Minor > 0 && !prev.Before(FirstRelease) {
		out = append([]Release{prev}, out...)
	}
	return out
}

// Check says why the rendered configuration files may not go to pods running image, or nil. An image
// whose tag names no release is not checked (a build of the operator's own source, a mirror's name):
// the operator cannot know what it reads. One of an unsupported release is refused; one of the
// previous release is refused when the files hold a key a later release introduced.
func (s Skew) Check(image string, files map[string]string) error {
	img, ok := ImageRelease(image)
	if !ok {
		return nil
	}
	supported := s.Supported()
	if !slices.Contains(supported, img) {
		names := make([]string, len(supported))
		for i, r := range supported {
			names[i] = r.String()
		}
		return fmt.Errorf("the services' image %s is release %s; this operator (%s) renders configuration for releases %s only: pin an image of one of them, or run an operator of release %s",
			image, img, s.Operator, strings.Join(names, " and "), img)
	}
	present := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(files[name]), &doc); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		keyPaths("", doc, present)
	}
	for _, k := range s.Keys {
		if !img.Before(k.Since) {
			continue
		}
		for p := range present {
			if p == k.Path || strings.HasPrefix(p, k.Path+".") {
				return fmt.Errorf("the configuration holds %s, which release %s (the services' image %s) does not read: release %s introduced it. Remove what sets it from the spec, or pin an image of release %s or later",
					k.Path, img, image, k.Since, k.Since)
			}
		}
	}
	return nil
}

// keyPaths adds the dotted path of every key in v (lists left out of the path) to out.
func keyPaths(prefix string, v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			keyPaths(p, e, out)
		}
	case []any:
		for _, e := range x {
			keyPaths(prefix, e, out)
		}
	}
}
