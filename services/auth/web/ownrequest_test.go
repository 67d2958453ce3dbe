package web

import (
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
)

// What a handler keeps of its request after answering must still read that request once the server has
// parsed the connection's next one into the same buffer (the adaptor's strings share it).
func TestOwnRequest_KeptStringsSurviveTheConnectionsNextRequest(t *testing.T) {
	type kept struct{ method, host, path, query, header, uri string }
	var got []kept
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.All("/*", adaptor.HTTPHandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = ownRequest(r)
		got = append(got, kept{r.Method, r.Host, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Client"), r.RequestURI})
		w.WriteHeader(http.StatusNoContent)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln) //nolint:errcheck // ends with Shutdown below
	t.Cleanup(func() { _ = app.Shutdown() })

	// One connection, so that the second request is parsed into the first one's buffer.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	send := func(method, path, header string) {
		req, err := http.NewRequest(method, "http://"+ln.Addr().String()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Client", header)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("%s %s: %d", method, path, res.StatusCode)
		}
	}
	send("POST", "/token?client_id=first-client", "aaaaaaaaaaaa")
	send("PUT", "/zzzzz?client_id=XXXXXXXXXXXX", "bbbbbbbbbbbb")

	host := ln.Addr().String()
	want := []kept{
		{"POST", host, "/token", "client_id=first-client", "aaaaaaaaaaaa", "/token?client_id=first-client"},
		{"PUT", host, "/zzzzz", "client_id=XXXXXXXXXXXX", "bbbbbbbbbbbb", "/zzzzz?client_id=XXXXXXXXXXXX"},
	}
	if len(got) != len(want) {
		t.Fatalf("handled %d requests, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d kept %+v, want %+v", i+1, got[i], want[i])
		}
	}
}
