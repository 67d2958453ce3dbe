package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key in the wrong case used to be read silently (encoding/json matches names case-insensitively),
// and the operator then rendered it back in another spelling. Every key must match exactly.
func TestParse_KeyInTheWrongCase_RefusedWithPathAndSuggestion(t *testing.T) {
	_, err := Parse([]byte("auth:\n  clients:\n  - clientId: my-app\n    redirectURIs: [http://localhost:3000/cb]\n"))
	want := "auth.clients[0].clientId: unknown key (did you mean clientID?)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want it to contain %q", err, want)
	}
}

func TestParse_UnknownKeys_EveryOneReportedWithTheClosestKnownKey(t *testing.T) {
	_, err := Parse([]byte("allowedOrigin: [https://a.example]\nredis: {url: redis://r, timout: 1s}\nforms: {frobnicate: 1}\n"))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{
		"allowedOrigin: unknown key (did you mean allowedOrigins?)",
		"redis.timout: unknown key (did you mean timeout?)",
		"forms.frobnicate: unknown key (known keys here: ",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "json") {
		t.Errorf("a YAML file's error speaks of JSON: %v", err)
	}
}

func TestParse_FreeFormMapKeysAreNotChecked_TheirValuesAre(t *testing.T) {
	if _, err := Parse([]byte("health: {checks: {'redis:responseTime': {warnAfter: 100ms}}}\n")); err != nil {
		t.Fatalf("a check name is a free-form key: %v", err)
	}
	_, err := Parse([]byte("health: {checks: {'redis:responseTime': {warnafter: 100ms}}}\n"))
	if err == nil || !strings.Contains(err.Error(), "health.checks.redis:responseTime.warnafter: unknown key (did you mean warnAfter?)") {
		t.Fatalf("a check's settings are checked: %v", err)
	}
}

func TestParse_WrongShapeOrType_SaysWhereAndWhatWasWanted(t *testing.T) {
	for doc, want := range map[string]string{
		"auth: {clients: my-app}\n":        "auth.clients: want a list, found the text \"my-app\"",
		"redis: [a]\n":                     "redis: want a mapping of keys, found a list",
		"redis: {db: zero}\n":              "redis.db: a string cannot be read as a whole number",
		"redis: {timeout: soon}\n":         `duration "soon"`,
		"logLevel: info\nlogLevel: info\n": `key "logLevel" already set`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "json") {
			t.Errorf("%q: got %v, want %q and no mention of JSON", doc, err, want)
		}
	}
}

func TestLoad_NamesTheFileOnEveryLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "my-app.yaml")
	if err := os.WriteFile(path, []byte("allowedOrigins: [ftp://x.example]\nlogLevel: loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil)
	if err == nil {
		t.Fatal("want an error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per problem: %q", err)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "config file "+path+": ") {
			t.Errorf("line %q does not name the file", l)
		}
	}
	if err := os.WriteFile(path, []byte("auth: {clients: [{clientId: a}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, nil); err == nil || err.Error() != "config file "+path+": auth.clients[0].clientId: unknown key (did you mean clientID?)" {
		t.Fatalf("got %v", err)
	}
}

func TestClosestKey(t *testing.T) {
	known := []string{"clientID", "name", "redirectURIs", "postLogoutRedirectURIs", "scopes", "secretFile"}
	for key, want := range map[string]string{
		"clientid": "clientID", "redirectUris": "redirectURIs", "redirectURI": "redirectURIs", "scope": "scopes",
		"secret": "", "nmae": "name", "zzzzzz": "",
	} {
		if got := closestKey(key, known); got != want {
			t.Errorf("closestKey(%q) = %q, want %q", key, got, want)
		}
	}
}
