package auth_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The provider's rooms and the doors between them (docs/architecture.md, "The provider's map"): the
// composition root wires areas, areas build on kits, kits on the realm and the stores, and nothing
// imports back up. A new import that breaks a rule fails here with the rule it breaks.
var layers = map[string]int{
	// leaf helpers: no other package of the provider
	"acr": 0, "device": 0, "keys": 0, "page": 0, "passwords": 0, "publicpaths": 0, "throttle": 0, "upstream": 0,
	// the stores
	"audit": 1, "link": 1, "mfa": 1, "passkey": 1, "sso": 1, "store": 1, "users": 1,
	// on a leaf's types: GitHub, LDAP directories and SAML IdPs as connectors (upstream's Identity and errors)
	"github": 1, "directory": 1, "samlsp": 1,
	// what is built on the stores
	"claims": 2, "authmail": 2, "backchannel": 2, "auditsink": 2, "realm": 3, "accounts": 3, "notify": 3,
	// the kits
	"web": 4, "signon": 5, "bearer": 5, "federation": 5,
	// the areas
	"oauth": 6, "journeys": 6, "account": 6, "admin": 6, "console": 6, "signin": 7,
	// the composition root
	"": 8,
}

// allowedAcross are the imports between areas: the sign-in page's sign-up action is journeys' door.
var allowedAcross = [][2]string{{"signin", "journeys"}}

func TestLayers_ImportsRunDownOnly(t *testing.T) {
	const prefix = "github.com/formsservice/formsservice/services/auth"
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
			return err
		}
		from := filepath.ToSlash(filepath.Dir(path))
		if from == "." {
			from = ""
		}
		level, known := layers[from]
		if !known {
			t.Errorf("%s: the package services/auth/%s has no layer: add it to layers (and to docs/architecture.md's map)", path, from)
			return nil
		}
		seen[from] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, prefix+"/") {
				continue
			}
			to := strings.TrimPrefix(p, prefix+"/")
			toLevel, ok := layers[to]
			switch {
			case !ok:
				t.Errorf("%s imports services/auth/%s, which has no layer", path, to)
			case slices.Contains(allowedAcross, [2]string{from, to}):
			case toLevel >= level:
				t.Errorf("%s (layer %d) imports services/auth/%s (layer %d): imports run down only", path, level, to, toLevel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range layers {
		if !seen[pkg] {
			t.Errorf("layers names services/auth/%s, which has no Go file: remove it", pkg)
		}
	}
}
