package testproc

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A connection made (and a request sent) before the target is named waits and then reaches it; later
// ones go straight through.
func TestRelay_HoldsConnectionsUntilItsTargetIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "served "+r.URL.Path) }))
	defer srv.Close()
	r := NewRelay(t)
	early, err := net.Dial("tcp", r.Addr()) // connected: the relay's listener has it
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if _, err := io.WriteString(early, "GET /early HTTP/1.0\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r.To(srv.Listener.Addr().String())
	res, err := http.ReadResponse(bufio.NewReader(early), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if string(b) != "served /early" {
		t.Fatalf("early request: %q", b)
	}
	res, err = http.Get("http://" + r.Addr() + "/later")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "served /later" {
		t.Fatalf("later request: %q", b)
	}
}
