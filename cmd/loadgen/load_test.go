package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunLoad_CountsAnswersAndSendsUniqueAddresses(t *testing.T) {
	var n atomic.Int64
	var mu sync.Mutex
	bodies := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Origin") != benchOrigin || !strings.Contains(string(b), `"consent":true`) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		bodies[string(b)]++
		mu.Unlock()
		if n.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusOK) // every tenth answer is not the expected 201
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"status":"created"}`)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	res, err := runLoad(loadSpec{addr: addr, path: "/waitlist", kind: "waitlist", origin: benchOrigin, conns: 4,
		warmup: 50 * time.Millisecond, duration: 300 * time.Millisecond, want: 201})
	if err != nil {
		t.Fatal(err)
	}
	if res.requests == 0 || res.p50 <= 0 || res.p99 < res.p50 {
		t.Fatalf("result %+v", res)
	}
	if res.unexpected[200] == 0 || res.unexpected[400] != 0 || res.unexpected[-1] != 0 {
		t.Fatalf("unexpected answers %v", res.unexpected)
	}
	mu.Lock()
	for b, times := range bodies {
		if times > 1 {
			t.Fatalf("the same body %d times: %s", times, b)
		}
	}
	mu.Unlock()

	rate, err := runLoad(loadSpec{addr: addr, path: "/waitlist", kind: "waitlist", origin: benchOrigin, conns: 4,
		duration: 500 * time.Millisecond, rate: 200, want: 201})
	if err != nil {
		t.Fatal(err)
	}
	if rate.perSecond < 150 || rate.perSecond > 250 {
		t.Fatalf("at a rate of 200/s: %.0f/s", rate.perSecond)
	}
	if rate.unexpected[400] != 0 || rate.unexpected[-1] != 0 {
		t.Fatalf("unexpected answers at a fixed rate %v", rate.unexpected)
	}
}

// A server may chunk any answer (net/http does once it outgrows 2 KiB); the body must come through
// whole and the connection stay usable for the next request.
func TestRoundTrip_ReadsChunkedAnswersAndKeepsTheConnection(t *testing.T) {
	big := strings.Repeat("x", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Check")
		_, _ = io.WriteString(w, big[:3000])
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, big[3000:]+r.URL.Path)
		w.Header().Set("X-Check", "done")
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 4096)
	var body []byte
	for _, path := range []string{"/one", "/two"} {
		code, keep, err := roundTrip(conn, br, []byte("GET "+path+" HTTP/1.1\r\nHost: t\r\n\r\n"), &body)
		if err != nil || code != 200 || !keep {
			t.Fatalf("%s: code %d keep-alive %v err %v", path, code, keep, err)
		}
		if string(body) != big+path {
			t.Fatalf("%s: body of %d bytes, want %d ending in the path", path, len(body), len(big)+len(path))
		}
	}
	code, _, err := roundTrip(conn, br, []byte("GET /three HTTP/1.1\r\nHost: t\r\n\r\n"), nil)
	if err != nil || code != 200 {
		t.Fatalf("a discarded chunked body: code %d err %v", code, err)
	}
}

func TestRunLoad_RefusesNonLoopbackTargets(t *testing.T) {
	if _, err := runLoad(loadSpec{addr: "192.0.2.1:80", conns: 1, duration: time.Millisecond}); err == nil {
		t.Fatal("a non-loopback address was accepted")
	}
}
