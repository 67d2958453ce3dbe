package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

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
	addr := "127.0.0.1:" + strconv.Itoa(testredis.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "-addr", addr}, func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		<-done
	}()
	url := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	code, page := httpGet(t, url+"/demo/")
	for code != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("GET /demo/: %d %s", code, page)
		}
		time.Sleep(50 * time.Millisecond)
		code, page = httpGet(t, url+"/demo/")
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
	url := startFormsCommand(t, testredis.Start(t).URL())
	if code, _ := httpGet(t, url+"/demo/"); code != 404 {
		t.Fatalf("production forms service answered /demo/ with %d, want 404", code)
	}
}
