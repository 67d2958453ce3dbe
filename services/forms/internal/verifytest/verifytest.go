// Package verifytest is a CAPTCHA provider's siteverify endpoint for tests, on a loopback port the kernel
// picks: it speaks the protocol Cloudflare Turnstile, hCaptcha and Google reCAPTCHA share (a form POST
// of secret, response and remoteip; a JSON answer with success and error-codes, and for reCAPTCHA v3 a
// score), knows one secret, and takes the tokens a test issues.
package verifytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Server is one provider's siteverify endpoint.
type Server struct {
	*httptest.Server
	secret string

	mu      sync.Mutex
	tokens  map[string]float64 // token -> its score (reCAPTCHA v3); single use, as the providers'
	calls   []Call
	failing int // answer this HTTP status instead (0: answer normally)
	hold    chan struct{}
	host    string // the hostname a good answer names
	action  string // the action a scored answer names
}

// Call is one request the server got.
type Call struct{ Secret, Response, RemoteIP string }

// Start runs a siteverify endpoint that takes secret until the test ends.
func Start(t testing.TB, secret string) *Server {
	s := &Server{secret: secret, tokens: map[string]float64{}, host: "www.example.com", action: "submit"}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.mu.Lock()
		if s.hold != nil {
			close(s.hold)
			s.hold = nil
		}
		s.mu.Unlock()
		s.Close()
	})
	return s
}

// Issue makes token good once, with score (reported as reCAPTCHA v3 does when score >= 0).
func (s *Server) Issue(token string, score float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = score
}

// Answer makes a good answer name hostname (where the token was solved; "" names none) and, with a
// score, action. By default www.example.com and submit.
func (s *Server) Answer(hostname, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.host, s.action = hostname, action
}

// Fail makes the endpoint answer status (a 5xx) until Fail(0).
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = status
}

// Hold makes every answer wait until the test ends: a provider that hangs.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = make(chan struct{})
}

// Calls returns what the endpoint was asked.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	hold, failing, host, action := s.hold, s.failing, s.host, s.action
	c := Call{Secret: r.PostForm.Get("secret"), Response: r.PostForm.Get("response"), RemoteIP: r.PostForm.Get("remoteip")}
	s.calls = append(s.calls, c)
	score, known := s.tokens[c.Response]
	if known && c.Secret == s.secret {
		delete(s.tokens, c.Response) // a token is good once
	}
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		return
	}
	if failing != 0 {
		http.Error(w, "unavailable", failing)
		return
	}
	answer := map[string]any{"success": false, "error-codes": []string{}}
	switch {
	case c.Secret == "":
		answer["error-codes"] = []string{"missing-input-secret"}
	case c.Secret != s.secret:
		answer["error-codes"] = []string{"invalid-input-secret"}
	case c.Response == "":
		answer["error-codes"] = []string{"missing-input-response"}
	case !known:
		answer["error-codes"] = []string{"invalid-input-response"}
	default:
		answer["success"] = true
		if host != "" {
			answer["hostname"] = host
		}
		answer["challenge_ts"] = "2026-01-01T00:00:00Z"
		if score >= 0 {
			answer["score"] = score
			answer["action"] = action
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}
