package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDevServer_ServesTheDemoPageWithTheSDK(t *testing.T) {
	url := startCommand(t, "dev", func(string) string { return "" })
	code, page := httpGet(t, url+"/demo/")
	if code != 200 {
		t.Fatalf("GET /demo/: %d %s", code, page)
	}
	if !strings.Contains(page, `data-auth-base="`+url+`"`) {
		t.Errorf("the page does not name the dev server's issuer %s", url)
	}
	if code, js := httpGet(t, url+"/demo/service-auth-client.min.js"); code != 200 || !strings.Contains(js, "ServiceAuthClient") {
		t.Errorf("GET the SDK bundle: %d", code)
	}
	if code, _ := httpGet(t, url+"/demo/callback?code=x&state=y"); code != 200 {
		t.Errorf("GET the redirect URI: %d", code)
	}
}

func TestFormsCommand_DoesNotServeTheDemoPage(t *testing.T) {
	url := startFormsCommand(t, testredis.Start(t, testredis.Options{AppendFsync: "no"}).URL())
	if code, _ := httpGet(t, url+"/demo/"); code != 404 {
		t.Fatalf("production forms service answered /demo/ with %d, want 404", code)
	}
}
