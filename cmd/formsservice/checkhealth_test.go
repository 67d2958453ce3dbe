package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckHealth_PassesOnlyA200ThatSaysPassOrWarn(t *testing.T) {
	for _, c := range []struct {
		code int
		body string
		ok   bool
	}{
		{200, `{"status":"pass"}`, true},
		{200, `{"status":"warn","checks":{}}`, true},
		{503, `{"status":"fail"}`, false},
		{200, `{"status":"fail"}`, false},
		{200, `not json`, false},
		{404, `{"status":"pass"}`, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/health" || r.Method != http.MethodGet {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/health+json")
			w.WriteHeader(c.code)
			_, _ = w.Write([]byte(c.body))
		}))
		out, _, err := cli(t, "check-health", srv.URL+"/health")
		srv.Close()
		if (err == nil) != c.ok {
			t.Errorf("%d %s: err %v, want ok=%v (stdout %q)", c.code, c.body, err, c.ok, out)
		}
		if !strings.Contains(out, srv.URL+"/health: ") {
			t.Errorf("%d %s: stdout %q does not report the answer", c.code, c.body, out)
		}
	}
}

func TestCheckHealth_RefusesWhatIsNotAnHTTPURLAndANodeThatIsDown(t *testing.T) {
	for _, arg := range []string{"ftp://x/health", "acme-health/health", "http:///health"} {
		if _, _, err := cli(t, "check-health", arg); err == nil {
			t.Errorf("check-health %q: no error", arg)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there now
	if _, _, err := cli(t, "check-health", "--timeout", "2s", addr+"/health"); err == nil {
		t.Error("a refused connection passed")
	}
}
