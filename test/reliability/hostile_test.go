package reliability

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
)

// serverReadTimeout is the platform's bound on reading one request (server.Options.ReadTimeout).
const serverReadTimeout = 10 * time.Second

// hostileRow is one hostile request and the answer docs/forms.md and docs/auth.md give it.
type hostileRow struct {
	name   string
	target string // "forms" or "auth"
	req    []byte
	status int    // 0: the server must close the connection without a success instead
	body   string // exact body, when set
	check  func(rawAnswer) string
}

const (
	jsonCT     = "Content-Type: application/json"
	goodOrigin = "Origin: " + origin
)

func waitlistJSON(email string) string {
	return `{"email":"` + email + `","consent":true,"name":"Hostile"}`
}

func contactJSON(name, email, message string) string {
	return `{"name":"` + name + `","email":"` + email + `","message":"` + message + `"}`
}

// TestHostileRequests_SpecAnswersAndNothingStored sends a table of hostile requests to the real forms
// and auth processes and checks each answer (status and body) and that the store did not change, while
// slowloris connections dribble headers and bodies: those are cut off by the server's read timeout, and
// ordinary requests keep being served meanwhile.
func TestHostileRequests_SpecAnswersAndNothingStored(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true, AppendFsync: "no"})
	forms := startProc(t, "forms", formsConfig(redisURLSection(rs.URL()), ""), nil)
	auth := startAuth(t, redisURLSection(rs.URL()))
	rdb := rs.Client()

	// Slowloris first, in the background: it takes the read timeout to resolve.
	slow := startSlowloris(t, forms.Addr)

	big := strings.Repeat("x", 17<<10)
	nested := `{"email":"nest@example.com","consent":true,"name":` + strings.Repeat("[", 8000) + strings.Repeat("]", 8000) + `}`
	rows := []hostileRow{
		// Headers
		{name: "header of 20 KB", target: "forms", req: post("/waitlist", waitlistJSON("h1@example.com"), goodOrigin, jsonCT, "X-Big: "+strings.Repeat("a", 20<<10)), status: 431},
		{name: "1000 headers", target: "forms", req: post("/waitlist", waitlistJSON("h2@example.com"), append([]string{goodOrigin, jsonCT}, manyHeaders(1000)...)...), status: 431},
		// RFC 9112 5.2: obsolete line folding is refused (400) or unfolded to a space, which an
		// Idempotency-Key may not hold (400 too).
		{name: "CRLF folded into an Idempotency-Key", target: "forms", req: post("/contact", contactJSON("Ada", "h3@example.com", "hello there, long enough"), goodOrigin, jsonCT, "Idempotency-Key: abc\r\n Set-Cookie: x=1"), status: 400},
		{name: "control character in an Idempotency-Key", target: "forms", req: post("/contact", contactJSON("Ada", "h4@example.com", "hello there, long enough"), goodOrigin, jsonCT, "Idempotency-Key: abc\x01def"), status: 400},
		// A bare LF ends a header line (RFC 9112 2.2 allows it): the smuggled header is just a header.
		{name: "bare LF in a header value", target: "forms", req: []byte("POST /waitlist HTTP/1.1\r\nHost: x\r\nOrigin: https://example.com\nX-Evil: 1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"), status: 400, check: invalid("email")},
		// Request smuggling (RFC 9112 6.1): refused, the connection closed, and the request behind it never
		// stored (the export at the end counts every entry).
		{name: "Content-Length and Transfer-Encoding both", target: "forms", req: []byte("POST /waitlist HTTP/1.1\r\nHost: x\r\nOrigin: https://example.com\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nPOST /waitlist HTTP/1.1\r\nHost: x\r\nOrigin: https://example.com\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(waitlistJSON("smuggled@example.com"))) + "\r\n\r\n" + waitlistJSON("smuggled@example.com")), status: 400, body: `{"status":"error"}`},
		// Origins
		{name: "Origin suffix spoof https://example.com.evil.test", target: "forms", req: post("/waitlist", waitlistJSON("o1@example.com"), "Origin: https://example.com.evil.test", jsonCT), status: 403, body: `{"status":"error"}`, check: noCORS},
		{name: "Origin null", target: "forms", req: post("/waitlist", waitlistJSON("o2@example.com"), "Origin: null", jsonCT), status: 403, body: `{"status":"error"}`, check: noCORS},
		{name: "Origin with user info https://example.com@evil.test", target: "forms", req: post("/contact", contactJSON("Eve", "o3@example.com", "hello there, this is long enough"), "Origin: https://example.com@evil.test", jsonCT), status: 403, body: `{"status":"error"}`, check: noCORS},
		{name: "Origin prefix spoof https://evil.example.com", target: "forms", req: post("/waitlist", waitlistJSON("o4@example.com"), "Origin: https://evil.example.com", jsonCT), status: 403, body: `{"status":"error"}`, check: noCORS},
		{name: "Origin http instead of https", target: "forms", req: post("/waitlist", waitlistJSON("o5@example.com"), "Origin: http://example.com", jsonCT), status: 403, body: `{"status":"error"}`, check: noCORS},
		{name: "no Origin", target: "forms", req: post("/waitlist", waitlistJSON("o6@example.com"), jsonCT), status: 403, body: `{"status":"error"}`},
		{name: "two Origin headers, the second allowed", target: "forms", req: post("/waitlist", waitlistJSON("o7@example.com"), "Origin: https://evil.test", goodOrigin, jsonCT), status: 403, body: `{"status":"error"}`},
		{name: "preflight from https://example.com.evil.test", target: "forms", req: []byte("OPTIONS /waitlist HTTP/1.1\r\nHost: x\r\nOrigin: https://example.com.evil.test\r\nAccess-Control-Request-Method: POST\r\n\r\n"), status: 403, check: noCORS},
		{name: "preflight from null", target: "forms", req: []byte("OPTIONS /contact HTTP/1.1\r\nHost: x\r\nOrigin: null\r\nAccess-Control-Request-Method: POST\r\n\r\n"), status: 403, check: noCORS},
		// Sizes
		{name: "17 KB chunked body", target: "forms", req: chunked("/contact", contactJSON("Big", "s1@example.com", big), 1000, goodOrigin, jsonCT), status: 413, body: `{"status":"error"}`},
		{name: "17 KB chunked in one chunk", target: "forms", req: chunked("/waitlist", `{"email":"s2@example.com","consent":true,"name":"`+big+`"}`, 1<<20, goodOrigin, jsonCT), status: 413, body: `{"status":"error"}`},
		{name: "17 KB with Content-Length", target: "forms", req: post("/contact", contactJSON("Big", "s3@example.com", big), goodOrigin, jsonCT), status: 413, body: `{"status":"error"}`},
		// fasthttp reads up to 8 KB of a declared body before any handler runs; a client that declares more
		// and stalls is a slow body (cut off by the read timeout, see startSlowloris).
		{name: "Content-Length of 1 GB, 9 KB sent", target: "forms", req: []byte("POST /waitlist HTTP/1.1\r\nHost: x\r\nOrigin: https://example.com\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n" + strings.Repeat(" ", 9<<10)), status: 413, body: `{"status":"error"}`},
		{name: "invalid chunk size", target: "forms", req: []byte("POST /waitlist HTTP/1.1\r\nHost: x\r\nOrigin: https://example.com\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"), check: notSuccess},
		// Content type and encoding
		{name: "text/plain (no preflight needed)", target: "forms", req: post("/waitlist", waitlistJSON("c1@example.com"), goodOrigin, "Content-Type: text/plain"), status: 415, body: `{"status":"error"}`},
		{name: "charset latin1", target: "forms", req: post("/waitlist", waitlistJSON("c2@example.com"), goodOrigin, "Content-Type: application/json; charset=latin1"), status: 415, body: `{"status":"error"}`},
		{name: "gzip content encoding", target: "forms", req: post("/waitlist", waitlistJSON("c3@example.com"), goodOrigin, jsonCT, "Content-Encoding: gzip"), status: 415, body: `{"status":"error"}`},
		// Bodies
		{name: "invalid UTF-8 in a field", target: "forms", req: post("/waitlist", `{"email":"u1@example.com","consent":true,"name":"Ada `+"\xff\xfe"+`"}`, goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "overlong UTF-8 encoding of '/'", target: "forms", req: post("/contact", contactJSON("Ada", "u2@example.com", "hello "+"\xc0\xaf"+" there, long enough"), goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "UTF-16 surrogate escape alone", target: "forms", req: post("/waitlist", `{"email":"u3@example.com","consent":true,"name":"\ud800"}`, goodOrigin, jsonCT), status: 201},
		{name: "deeply nested JSON inside a field", target: "forms", req: post("/waitlist", nested, goodOrigin, jsonCT), status: 400, check: invalid("name")},
		{name: "16 KB of opening brackets", target: "forms", req: post("/waitlist", strings.Repeat("[", 16000), goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "duplicate keys, the last one valid", target: "forms", req: post("/waitlist", `{"email":"not an address","email":"d1@example.com","consent":true}`, goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "duplicate keys, consent false then true", target: "forms", req: post("/waitlist", `{"email":"d2@example.com","consent":false,"consent":true}`, goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "escaped duplicate key", target: "forms", req: post("/waitlist", `{"email":"d3@example.com","\u0065mail":"d4@example.com","consent":true}`, goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "NUL escaped in a name", target: "forms", req: post("/waitlist", `{"email":"n1@example.com","consent":true,"name":"Ada\u0000Lovelace"}`, goodOrigin, jsonCT), status: 400, check: invalid("name")},
		{name: "raw NUL byte in a string", target: "forms", req: post("/contact", contactJSON("Ada\x00", "n2@example.com", "hello there, long enough"), goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "NUL in the message", target: "forms", req: post("/contact", contactJSON("Ada", "n3@example.com", `hello\u0000there, long enough`), goodOrigin, jsonCT), status: 400, check: invalid("message")},
		{name: "NUL in an e-mail address", target: "forms", req: post("/waitlist", `{"email":"n4@example.com\u0000.evil.test","consent":true}`, goodOrigin, jsonCT), status: 400, check: invalid("email")},
		{name: "CRLF in a name (mail header injection)", target: "forms", req: post("/contact", contactJSON(`Ada\r\nBcc: victim@evil.test`, "r1@example.com", "hello there, long enough"), goodOrigin, jsonCT), status: 400, check: invalid("name")},
		{name: "CRLF in an organization", target: "forms", req: post("/contact", `{"name":"Ada","email":"r2@example.com","organization":"Club\r\nX-Spam: yes","message":"hello there, long enough"}`, goodOrigin, jsonCT), status: 400, check: invalid("organization")},
		{name: "CRLF in an e-mail address", target: "forms", req: post("/contact", contactJSON("Ada", `r3@example.com\r\nBcc: victim@evil.test`, "hello there, long enough"), goodOrigin, jsonCT), status: 400, check: invalid("email")},
		{name: "number too large for any type", target: "forms", req: post("/waitlist", `{"email":"b1@example.com","consent":1e999999}`, goodOrigin, jsonCT), status: 400, check: invalid("consent")},
		{name: "byte order mark before the object", target: "forms", req: post("/waitlist", "\xef\xbb\xbf"+waitlistJSON("b2@example.com"), goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "two objects", target: "forms", req: post("/waitlist", waitlistJSON("b3@example.com")+waitlistJSON("b4@example.com"), goodOrigin, jsonCT), status: 400, check: invalid("_body")},
		{name: "honeypot filled", target: "forms", req: post("/waitlist", `{"email":"b5@example.com","consent":true,"_gotcha":"http://spam"}`, goodOrigin, jsonCT), status: 201, body: `{"status":"created"}`},

		// Auth
		{name: "authorize: CRLF in redirect_uri", target: "auth", req: get(authorizeQuery(auth, auth.redirect+"\r\nLocation: https://evil.test")), status: 400, check: noRedirect},
		{name: "authorize: redirect_uri on a look-alike host", target: "auth", req: get(authorizeQuery(auth, strings.Replace(auth.redirect, "/cb", ".evil.test/cb", 1))), status: 400, check: noRedirect},
		{name: "authorize: redirect_uri with an extra path", target: "auth", req: get(authorizeQuery(auth, auth.redirect+"/../evil")), status: 400, check: noRedirect},
		{name: "authorize: unknown client", target: "auth", req: get("/oauth2/authorize?client_id=evil&response_type=code&redirect_uri=" + url.QueryEscape("https://evil.test/cb")), status: 400, check: noRedirect},
		{name: "authorize: redirect_uri twice, registered first", target: "auth", req: get(authorizeQuery(auth, auth.redirect) + "&redirect_uri=" + url.QueryEscape("https://evil.test/cb")), status: 400, check: noRedirect},
		{name: "authorize: state twice", target: "auth", req: get(authorizeQuery(auth, auth.redirect) + "&state=other-state-0123"), status: 303, check: redirectsError(auth.redirect, "invalid_request")},
		{name: "authorize: 20 KB state", target: "auth", req: get(authorizeQuery(auth, auth.redirect) + "&state=" + strings.Repeat("s", 20<<10)), status: 431},
		{name: "token: grant_type twice", target: "auth", req: form("/oauth2/token", "grant_type=refresh_token&grant_type=authorization_code&refresh_token=x&client_id=app"), status: 400, check: oauthError("invalid_request")},
		{name: "token: 100 KB body", target: "auth", req: form("/oauth2/token", "grant_type=refresh_token&client_id=app&refresh_token="+strings.Repeat("r", 100<<10)), status: 413},
		{name: "token: 100 KB chunked body", target: "auth", req: chunkedForm("/oauth2/token", "grant_type=refresh_token&client_id=app&refresh_token="+strings.Repeat("r", 100<<10)), status: 413},
		{name: "token: invalid UTF-8 refresh token", target: "auth", req: form("/oauth2/token", "grant_type=refresh_token&client_id=app&refresh_token=%ff%fe"), status: 400, check: oauthError("invalid_grant", "invalid_request")},
		{name: "token: NUL in the code", target: "auth", req: form("/oauth2/token", "grant_type=authorization_code&client_id=app&code=a%00b&code_verifier="+strings.Repeat("v", 43)+"&redirect_uri="+url.QueryEscape(auth.redirect)), status: 400, check: oauthError("invalid_grant", "invalid_request")},
		{name: "token preflight from a look-alike origin", target: "auth", req: []byte("OPTIONS /oauth2/token HTTP/1.1\r\nHost: x\r\nOrigin: " + auth.Base + ".evil.test\r\nAccess-Control-Request-Method: POST\r\n\r\n"), status: 403, check: noCORS},
		{name: "token preflight from null", target: "auth", req: []byte("OPTIONS /oauth2/token HTTP/1.1\r\nHost: x\r\nOrigin: null\r\nAccess-Control-Request-Method: POST\r\n\r\n"), status: 403, check: noCORS},
	}

	before := storeState(t, rdb)
	for _, row := range rows {
		addr := forms.Addr
		if row.target == "auth" {
			addr = auth.Addr
		}
		start := time.Now()
		ans := rawRequest(addr, row.req, 5*time.Second)
		elapsed := time.Since(start)
		var problems []string
		switch {
		case ans.err != nil && !ans.closed:
			problems = append(problems, fmt.Sprintf("no answer: %v", ans.err))
		case row.status != 0 && ans.status != row.status:
			problems = append(problems, fmt.Sprintf("status %d, want %d (body %.200q)", ans.status, row.status, ans.body))
		case row.body != "" && ans.body != row.body:
			problems = append(problems, fmt.Sprintf("body %.200q, want %q", ans.body, row.body))
		}
		if ans.status >= 500 {
			problems = append(problems, fmt.Sprintf("server error %d", ans.status))
		}
		if row.check != nil && len(problems) == 0 {
			if p := row.check(ans); p != "" {
				problems = append(problems, p)
			}
		}
		if elapsed > 3*time.Second {
			problems = append(problems, fmt.Sprintf("took %s", elapsed))
		}
		stored := row.status == 201 && row.body == "" // a valid submission in the table stores one record
		now := storeState(t, rdb)
		if changes := storeChanges(before, now); len(changes) > 0 && !stored {
			problems = append(problems, "the store changed: "+strings.Join(changes, ", "))
		}
		before = now
		if len(problems) > 0 {
			t.Errorf("%s: %s", row.name, strings.Join(problems, "; "))
		} else {
			t.Logf("%-55s → %s", row.name, describe(ans))
		}
	}
	for _, p := range []*proc{forms, auth.proc} {
		if exited, _ := p.Exited(); exited {
			t.Fatalf("formsservice %s died during the table", p.name)
		}
	}
	slow.wait(t, forms)
	if got := len(exported(t, "waitlist", formsConfig(redisURLSection(rs.URL()), ""))); got != 2 {
		// The one valid row (u3, a lone surrogate decoded to U+FFFD as encoding/json does) and the
		// probe of the slowloris check.
		t.Errorf("%d waitlist entries stored, want 2", got)
	}
}

func manyHeaders(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("X-H%d: %s", i, strings.Repeat("v", 20))
	}
	return out
}

func get(pathQuery string) []byte {
	return []byte("GET " + pathQuery + " HTTP/1.1\r\nHost: auth.test\r\n\r\n")
}

func form(path, body string) []byte {
	return post(path, body, "Content-Type: application/x-www-form-urlencoded")
}

func chunkedForm(path, body string) []byte {
	return chunked(path, body, 4096, "Content-Type: application/x-www-form-urlencoded")
}

func authorizeQuery(a *authService, redirect string) string {
	q := url.Values{"client_id": {authClientID}, "response_type": {"code"}, "scope": {"openid"}, "state": {"state-0123456789"},
		"redirect_uri": {redirect}, "code_challenge": {strings.Repeat("c", 43)}, "code_challenge_method": {"S256"}}
	return "/oauth2/authorize?" + q.Encode()
}

// storeState is every key of the store with its type and size (members of a hash, list, stream, set or
// sorted set, or the length of a string): a new record anywhere changes it, whatever the key layout.
func storeState(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[string]int64{}
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		if strings.HasPrefix(key, "auth:throttle:rate:") {
			continue // the provider's request counters (auth.rateLimit) count every request, by design
		}
		typ, err := rdb.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		switch typ {
		case "hash":
			n, err = rdb.HLen(ctx, key).Result()
		case "list":
			n, err = rdb.LLen(ctx, key).Result()
		case "stream":
			n, err = rdb.XLen(ctx, key).Result()
		case "set":
			n, err = rdb.SCard(ctx, key).Result()
		case "zset":
			n, err = rdb.ZCard(ctx, key).Result()
		case "string":
			n, err = rdb.StrLen(ctx, key).Result()
		}
		if err != nil {
			t.Fatal(err)
		}
		out[typ+" "+key] = n
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// storeChanges lists what differs between two store states.
func storeChanges(before, after map[string]int64) []string {
	var out []string
	for k, n := range after {
		if m, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("new %s (%d)", k, n))
		} else if m != n {
			out = append(out, fmt.Sprintf("%s: %d → %d", k, m, n))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, "removed "+k)
		}
	}
	return out
}

func describe(a rawAnswer) string {
	if a.closed {
		return "connection closed"
	}
	return fmt.Sprintf("%d %.80s", a.status, strings.TrimSpace(a.body))
}

func noCORS(a rawAnswer) string {
	if v := a.header.Get("Access-Control-Allow-Origin"); v != "" {
		return "Access-Control-Allow-Origin: " + v
	}
	return ""
}

func noRedirect(a rawAnswer) string {
	if loc := a.header.Get("Location"); loc != "" {
		return "redirected to " + loc
	}
	return ""
}

// redirectsError wants a redirect to the registered URI carrying error=code and no authorization code.
func redirectsError(redirect, code string) func(rawAnswer) string {
	return func(a rawAnswer) string {
		loc, err := url.Parse(a.header.Get("Location"))
		if err != nil || !strings.HasPrefix(loc.String(), redirect+"?") || loc.Query().Get("error") != code || loc.Query().Get("code") != "" {
			return fmt.Sprintf("redirected to %q, want %s?error=%s without a code", a.header.Get("Location"), redirect, code)
		}
		return ""
	}
}

func notSuccess(a rawAnswer) string {
	if a.status >= 200 && a.status < 300 {
		return fmt.Sprintf("answered %d", a.status)
	}
	return ""
}

// invalid wants the forms' 400 body naming field among its errors.
func invalid(field string) func(rawAnswer) string {
	return func(a rawAnswer) string {
		if !strings.HasPrefix(a.body, `{"status":"invalid","errors":{`) || !strings.Contains(a.body, `"`+field+`":`) {
			return fmt.Sprintf("body %.200q, want status invalid with an error for %s", a.body, field)
		}
		return ""
	}
}

// oauthError wants an RFC 6749 error body with one of codes.
func oauthError(codes ...string) func(rawAnswer) string {
	return func(a rawAnswer) string {
		for _, c := range codes {
			if strings.Contains(a.body, `"error":"`+c+`"`) {
				return ""
			}
		}
		return fmt.Sprintf("body %.200q, want error %v", a.body, codes)
	}
}

// slowloris holds connections that send their request a byte at a time.
type slowloris struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	results []string
	bad     []string
	started time.Time
}

// startSlowloris opens 20 connections that dribble headers and 20 that dribble a body, one byte every
// 300 ms: none can finish before the server's read timeout.
func startSlowloris(t *testing.T, addr string) *slowloris {
	s := &slowloris{started: time.Now()}
	body := waitlistJSON("slow@example.com")
	headerReq := post("/waitlist", body, goodOrigin, jsonCT)
	for i := range 40 {
		s.wg.Go(func() {
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				s.fail("dial: %v", err)
				return
			}
			defer conn.Close()
			req := headerReq
			if i%2 == 1 { // headers at once, then the body byte by byte
				head := len(req) - len(body)
				if _, err := conn.Write(req[:head]); err != nil {
					s.fail("write: %v", err)
					return
				}
				req = req[head:]
			}
			start := time.Now()
			_ = conn.SetDeadline(start.Add(serverReadTimeout + 10*time.Second))
			answered := make(chan rawAnswer, 1)
			go func() { answered <- readAnswer(conn) }()
			for _, b := range req {
				select {
				case a := <-answered:
					s.record(i, a, time.Since(start))
					return
				case <-time.After(300 * time.Millisecond): // the slow client's pace: the behaviour under test
				}
				if _, err := conn.Write([]byte{b}); err != nil {
					s.record(i, <-answered, time.Since(start))
					return
				}
			}
			s.fail("connection %d sent its whole request slowly and was never cut off", i)
		})
	}
	return s
}

func (s *slowloris) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bad = append(s.bad, fmt.Sprintf(format, args...))
}

func (s *slowloris) record(i int, a rawAnswer, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kind := "headers"
	if i%2 == 1 {
		kind = "body"
	}
	if a.status >= 200 && a.status < 300 || a.status >= 500 {
		s.bad = append(s.bad, fmt.Sprintf("slow %s answered %d", kind, a.status))
	}
	if after > serverReadTimeout+3*time.Second {
		s.bad = append(s.bad, fmt.Sprintf("slow %s cut off only after %s", kind, after))
	}
	s.results = append(s.results, fmt.Sprintf("%s:%s@%.1fs", kind, describe(a), after.Seconds()))
}

// wait checks, while the slow connections are still open, that an ordinary request is served at once
// (well inside the read timeout that frees the slow ones; 2 s leaves room for a loaded CI machine),
// then waits for all of them to be cut off.
func (s *slowloris) wait(t *testing.T, forms *proc) {
	t.Helper()
	fc := newFormsClient(forms.Base, 1)
	defer fc.close()
	if a := fc.post("/waitlist", waitlistBody("during-slowloris@example.com")); a.status != 201 || a.elapsed > 2*time.Second {
		t.Errorf("an ordinary request during the slowloris: %d after %s", a.status, a.elapsed)
	}
	s.wg.Wait()
	for _, b := range s.bad {
		t.Error(b)
	}
	t.Logf("slowloris: 40 connections cut off (read timeout %s): %s", serverReadTimeout, summarize(s.results))
}

func summarize(rs []string) string {
	counts := map[string]int{}
	for _, r := range rs {
		k, _, _ := strings.Cut(r, "@")
		counts[k]++
	}
	return sortedCounts(counts)
}
