package forms

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
)

func TestWaitlist_NewAddress_Returns201AndStoresLowerCase(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", `{"email":"Ada.Lovelace@Example.COM","consent":true,"name":" Ada ","size":"1-50","role":"admin"}`).
		expect(t, 201, "created")
	raw, err := h.rdb.HGet(t.Context(), store.WaitlistEntries, "ada.lovelace@example.com").Result()
	if err != nil {
		t.Fatalf("entry not stored under the lower-case address: %v", err)
	}
	var rec store.WaitlistRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Email != "ada.lovelace@example.com" || rec.Name != "Ada" || rec.Size != "1–50" || !rec.Consent || rec.Origin != formstest.Origin || rec.CreatedAt.IsZero() {
		t.Fatalf("stored %+v", rec)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "created") != 1 {
		t.Error("created submission not counted")
	}
}

func TestWaitlist_DuplicateInOtherCase_Returns200(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", `{"email":"ada@example.com","consent":true}`).expect(t, 201, "created")
	h.post("/waitlist", `{"email":"ADA@Example.com","consent":true,"name":"Someone else"}`).expect(t, 200, "duplicate")
	h.post("/waitlist", `{"email":"ada@example.com","consent":true}`).expect(t, 200, "duplicate")
	if n := h.rdb.HLen(t.Context(), store.WaitlistEntries).Val(); n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
	var rec store.WaitlistRecord
	_ = json.Unmarshal([]byte(h.rdb.HGet(t.Context(), store.WaitlistEntries, "ada@example.com").Val()), &rec)
	if rec.Name != "" {
		t.Fatalf("a duplicate overwrote the first entry: %+v", rec)
	}
}

func TestWaitlist_IDNDomainInEitherSpelling_IsOneEntry(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", `{"email":"Ada@Bücher.de","consent":true}`).expect(t, 201, "created")
	h.post("/waitlist", `{"email":"ada@xn--bcher-kva.de","consent":true}`).expect(t, 200, "duplicate")
}

func TestContact_Valid_Returns201AndStoresInStreamBeforeAnswering(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/contact", `{"name":"Ada","email":"ada@example.com","message":"Hello there, a question.","topic":"sales","organization":"ACME"}`).
		expect(t, 201, "created")
	msgs, err := h.rdb.XRange(t.Context(), store.ContactStream, "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("stream holds %d messages (%v), want 1", len(msgs), err)
	}
	var rec store.ContactRecord
	if err := json.Unmarshal([]byte(msgs[0].Values["m"].(string)), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Name != "Ada" || rec.Topic != "sales" || rec.Organization != "ACME" || rec.Message != "Hello there, a question." {
		t.Fatalf("stored %+v", rec)
	}
}

func TestContact_InvalidFields_Returns400WithErrorsByField(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.post("/contact", `{"name":"","email":"nope","message":"short","topic":"jobs"}`)
	a.expect(t, 400, "invalid")
	want := map[string]string{"name": "required", "email": "invalid_email", "message": "too_short", "topic": "invalid_choice"}
	if fmt.Sprint(a.errors) != fmt.Sprint(want) {
		t.Fatalf("errors %v, want %v", a.errors, want)
	}
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 0 {
		t.Fatalf("an invalid message was stored")
	}
}

func TestWaitlist_ConsentAsString_Returns400(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.post("/waitlist", `{"email":"ada@example.com","consent":"true"}`)
	a.expect(t, 400, "invalid")
	if a.errors["consent"] != CodeInvalidType {
		t.Fatalf("errors %v", a.errors)
	}
}

func TestForms_MalformedJSON_Returns400WithBodyError(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, p := range []string{"/contact", "/waitlist"} {
		for _, b := range []string{`{"email":`, `[]`, `null`, ``, `{"a":1}{"b":2}`} {
			a := h.post(p, b)
			a.expect(t, 400, "invalid")
			if a.errors[BodyField] != CodeInvalidJSON || len(a.errors) != 1 {
				t.Fatalf("%s %q: errors %v", p, b, a.errors)
			}
		}
	}
}

func TestForms_OriginNotAllowed_Returns403(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, p := range []string{"/contact", "/waitlist"} {
		for _, origin := range []string{"https://evil.example", "null", "https://www.example.com.evil.io", "http://www.example.com"} {
			a := h.post(p, validWaitlist, "Origin", origin)
			a.expect(t, 403, "error")
			if a.header.Get("Access-Control-Allow-Origin") != "" {
				t.Fatalf("403 carries Access-Control-Allow-Origin %q", a.header.Get("Access-Control-Allow-Origin"))
			}
		}
		// A large body from a refused origin still gets its answer.
		h.post(p, strings.Repeat("a", 3<<20), "Origin", "https://evil.example").expect(t, 403, "error")
		// No Origin header at all (curl, a server-side script) is not an allowed origin.
		h.post(p, validWaitlist, "Origin", "").expect(t, 403, "error")
	}
	if h.rdb.HLen(t.Context(), store.WaitlistEntries).Val() != 0 {
		t.Fatal("a refused origin stored an entry")
	}
}

func TestForms_WildcardOrigin_AllowsSubdomains(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.post("/waitlist", validWaitlist, "Origin", "https://app.example.org")
	a.expect(t, 201, "created")
	if got := a.header.Get("Access-Control-Allow-Origin"); got != "https://app.example.org" {
		t.Fatalf("Access-Control-Allow-Origin %q", got)
	}
}

func TestForms_EveryAnswerToAllowedOrigin_CarriesCORSHeaders(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	answers := []answer{
		h.post("/waitlist", validWaitlist),                               // 201
		h.post("/waitlist", validWaitlist),                               // 200
		h.post("/waitlist", `{}`),                                        // 400
		h.post("/waitlist", strings.Repeat(" ", MaxBodyBytes+1)),         // 413
		h.post("/waitlist", validWaitlist, "Content-Type", "text/plain"), // 415
	}
	for _, a := range answers {
		if a.header.Get("Access-Control-Allow-Origin") != formstest.Origin {
			t.Errorf("%d answer: Access-Control-Allow-Origin %q", a.code, a.header.Get("Access-Control-Allow-Origin"))
		}
		if !strings.Contains(a.header.Get("Vary"), "Origin") {
			t.Errorf("%d answer: Vary %q", a.code, a.header.Get("Vary"))
		}
		if a.header.Get("Content-Type") != "application/json" {
			t.Errorf("%d answer: Content-Type %q", a.code, a.header.Get("Content-Type"))
		}
	}
}

func TestForms_Preflight(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, p := range []string{"/contact", "/waitlist"} {
		a := h.do(http.MethodOptions, p, map[string]string{
			"Origin": formstest.Origin, "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "content-type,idempotency-key",
		}, "")
		if a.code != 204 {
			t.Fatalf("%s preflight: %d", p, a.code)
		}
		want := map[string]string{
			"Access-Control-Allow-Origin":  formstest.Origin,
			"Access-Control-Allow-Methods": "POST",
			"Access-Control-Allow-Headers": "content-type, idempotency-key",
			"Access-Control-Max-Age":       "600",
			"Vary":                         "Origin",
		}
		for k, v := range want {
			if got := a.header.Get(k); got != v {
				t.Errorf("%s preflight %s = %q, want %q", p, k, got, v)
			}
		}
		refused := h.do(http.MethodOptions, p, map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, "")
		refused.expect(t, 403, "error")
		if refused.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("refused preflight allows the origin")
		}
	}
}

func TestForms_NotJSON_Returns415(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	// Form posts are taken, and answered with pages (formpost_test.go).
	for _, ct := range []string{"", "text/plain", "application/json; charset=latin1", "application/jsonp", "multipart/mixed; boundary=x"} {
		h.post("/waitlist", validWaitlist, "Content-Type", ct).expect(t, 415, "error")
	}
	h.post("/waitlist", validWaitlist, "Content-Encoding", "gzip").expect(t, 415, "error")
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"} {
		a := h.post("/waitlist", fmt.Sprintf(`{"email":"ct%d@example.com","consent":true}`, len(ct)), "Content-Type", ct)
		a.expect(t, 201, "created")
	}
}

func TestForms_OrderOfChecks(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	big := strings.Repeat("x", MaxBodyBytes+1)
	// origin before size
	h.post("/contact", big, "Origin", "https://evil.example").expect(t, 403, "error")
	// size before content type
	h.post("/contact", big, "Content-Type", "text/plain").expect(t, 413, "error")
	// content type before JSON
	h.post("/contact", `{"broken`, "Content-Type", "text/plain").expect(t, 415, "error")
	// JSON before fields
	a := h.post("/contact", `{"broken`)
	a.expect(t, 400, "invalid")
	if a.errors[BodyField] != CodeInvalidJSON {
		t.Fatalf("errors %v", a.errors)
	}
	// fields before store: a stopped store does not turn a 400 into a 502
	h.redis.Stop()
	h.post("/contact", `{}`).expect(t, 400, "invalid")
}

func TestForms_BodyAtLimit_Accepted_OverLimit_Returns413(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	pad := func(json string, n int) string { return json + strings.Repeat(" ", n-len(json)) }
	h.post("/waitlist", pad(validWaitlist, MaxBodyBytes)).expect(t, 201, "created")
	h.post("/waitlist", pad(`{"email":"b@example.com","consent":true}`, MaxBodyBytes+1)).expect(t, 413, "error")
	// Far beyond the limit, and beyond the server's 1 MiB: the client still reads the 413 (lingering close).
	for _, n := range []int{100 << 10, 2 << 20, 5 << 20} {
		h.post("/contact", strings.Repeat("a", n)).expect(t, 413, "error")
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "too_large") != 1 {
		t.Error("413 not counted")
	}
}

// rawRequest writes a request by hand on one connection and reads the answers, so that chunked bodies
// and connection reuse are exactly what the test says.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) send(s string) {
	if _, err := r.c.Write([]byte(s)); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawConn) read() (answer, error) {
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	return decodeAnswer(r.t, resp), nil
}

func chunked(body string, chunk int) string {
	var b strings.Builder
	for len(body) > 0 {
		n := min(chunk, len(body))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func postHead(path string, extra string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: forms\r\nOrigin: " + formstest.Origin + "\r\nContent-Type: application/json\r\n" + extra
}

func TestForms_ChunkedBodyOverLimit_Returns413(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, size := range []int{MaxBodyBytes + 1, 100 << 10, 3 << 20} {
		r := dialRaw(t, h.addr)
		req := postHead("/contact", "Transfer-Encoding: chunked\r\n\r\n") + chunked(strings.Repeat("a", size), 4096)
		go func() { _, _ = r.c.Write([]byte(req)) }() // the server may answer (and close) before it is all sent
		a, err := r.read()
		if err != nil {
			t.Fatalf("%d-byte chunked body: no answer: %v", size, err)
		}
		a.expect(t, 413, "error")
	}
	if h.rdb.XLen(t.Context(), store.ContactStream).Val() != 0 {
		t.Fatal("stored something")
	}
}

func TestForms_ChunkedBodyWithinLimit_IsAccepted(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	r := dialRaw(t, h.addr)
	body := validWaitlist + strings.Repeat(" ", MaxBodyBytes-len(validWaitlist))
	r.send(postHead("/waitlist", "Transfer-Encoding: chunked\r\n\r\n") + chunked(body, 1000))
	a, err := r.read()
	if err != nil {
		t.Fatal(err)
	}
	a.expect(t, 201, "created")
}

func TestForms_ConnectionAfterRefusedBody_ServesNextRequestCleanly(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	// A refused 20 KB body must not be parsed as the next request on a kept-alive connection: either the
	// server drains it and answers the next request, or it closes the connection.
	cases := map[string]string{
		"content-length 413": postHead("/waitlist", "Content-Length: 20000\r\n\r\n") + strings.Repeat("a", 20000),
		"chunked 413":        postHead("/waitlist", "Transfer-Encoding: chunked\r\n\r\n") + chunked(strings.Repeat("a", 20000), 3000),
		"403 with a body":    strings.Replace(postHead("/waitlist", "Content-Length: 12000\r\n\r\n"), formstest.Origin, "https://evil.example", 1) + smuggled(12000),
		"413 with a body":    postHead("/waitlist", "Content-Length: 20000\r\n\r\n") + smuggled(20000),
	}
	i := 0
	for name, first := range cases {
		i++
		r := dialRaw(t, h.addr)
		r.send(first)
		if _, err := r.read(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		next := `{"email":"next-` + strconv.Itoa(i) + `@example.com","consent":true}`
		r.send(postHead("/waitlist", "Content-Length: "+strconv.Itoa(len(next))+"\r\n\r\n") + next)
		a, err := r.read()
		if err != nil {
			t.Errorf("%s: the connection was closed after a refused body within the drain limit: %v", name, err)
			continue
		}
		a.expect(t, 201, "created")
	}
	if h.rdb.HExists(t.Context(), store.WaitlistEntries, "smuggled@example.com").Val() {
		t.Fatal("the tail of a refused body was served as a request")
	}
}

// smuggled is a body of n bytes whose tail is a complete request: served as one, it would store
// smuggled@example.com.
func smuggled(n int) string {
	inner := `{"email":"smuggled@example.com","consent":true}`
	req := postHead("/waitlist", "Content-Length: "+strconv.Itoa(len(inner))+"\r\n\r\n") + inner
	return strings.Repeat("a", n-len(req)) + req
}

func TestWaitlist_HoneypotFilled_Returns201AndStoresNothing(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", `{"email":"bot@example.com","consent":true,"_gotcha":"http://spam"}`).expect(t, 201, "created")
	h.post("/contact", `{"_gotcha":"x","message":"buy now"}`).expect(t, 201, "created")
	if h.rdb.HLen(t.Context(), store.WaitlistEntries).Val() != 0 || h.rdb.XLen(t.Context(), store.ContactStream).Val() != 0 {
		t.Fatal("a honeypot submission was stored")
	}
	if h.counter("formsservice_forms_honeypot_hits_total", "endpoint", "waitlist") != 1 ||
		h.counter("formsservice_forms_honeypot_hits_total", "endpoint", "contact") != 1 {
		t.Fatal("honeypot hits not counted")
	}
}

func TestContact_SameIdempotencyKey_StoresOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	key := "0b8a3a8e-6a43-4c35-9b7e-2f7f3f1d9c11"
	for range 3 {
		h.post("/contact", validContact, "Idempotency-Key", key).expect(t, 201, "created")
	}
	h.post("/contact", validContact, "Idempotency-Key", "another-key").expect(t, 201, "created")
	h.post("/contact", validContact).expect(t, 201, "created") // no key: a new message each time
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 3 {
		t.Fatalf("%d messages stored, want 3", n)
	}
	ttl := h.rdb.PTTL(t.Context(), store.IdempotencyRecordKey(formstest.Origin, key)).Val()
	if ttl < 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("idempotency record lives %s, want 24h", ttl)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "contact", "result", "replayed") != 2 {
		t.Fatal("replays not counted")
	}
}

func TestContact_BadIdempotencyKey_Returns400(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.post("/contact", validContact, "Idempotency-Key", strings.Repeat("k", MaxIdempotencyKey+1))
	a.expect(t, 400, "invalid")
	if len(a.errors) != 0 || !strings.Contains(a.raw, `"headers":{"Idempotency-Key":"too_long"}`) {
		t.Fatalf("400 body %s", a.raw)
	}
	h.post("/contact", validContact, "Idempotency-Key", strings.Repeat("k", MaxIdempotencyKey)).expect(t, 201, "created")
}

func TestForms_RateLimit_Returns429WithRetryAfter_PerEndpointAndClient(t *testing.T) {
	cfg := formstest.Config()
	cfg.Forms.RateLimitPerMinute = perMinute(3)
	cfg.TrustedProxies = []string{"127.0.0.1"}
	h := newHarness(t, harnessOpts{cfg: cfg})
	for i := range 3 {
		h.post("/waitlist", fmt.Sprintf(`{"email":"u%d@example.com","consent":true}`, i)).expect(t, 201, "created")
	}
	a := h.post("/waitlist", `{"email":"u9@example.com","consent":true}`)
	a.expect(t, 429, "error")
	ra, err := strconv.Atoi(a.header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", a.header.Get("Retry-After"))
	}
	if a.header.Get("Access-Control-Expose-Headers") != "Retry-After, Idempotent-Replayed" {
		t.Fatal("Retry-After not exposed to the page's script")
	}
	if h.rdb.HExists(t.Context(), store.WaitlistEntries, "u9@example.com").Val() {
		t.Fatal("a rate-limited submission was stored")
	}
	// The other endpoint has its own budget.
	h.post("/contact", validContact).expect(t, 201, "created")
	// Another client behind the trusted proxy has its own budget; a forged left-most entry does not help.
	h.post("/waitlist", `{"email":"v1@example.com","consent":true}`, "X-Forwarded-For", "203.0.113.7").expect(t, 201, "created")
	h.post("/waitlist", `{"email":"v2@example.com","consent":true}`, "X-Forwarded-For", "203.0.113.9, 127.0.0.1").expect(t, 201, "created")
	for i := range 2 {
		h.post("/waitlist", fmt.Sprintf(`{"email":"w%d@example.com","consent":true}`, i), "X-Forwarded-For", "198.51.100.1, 203.0.113.7").expect(t, 201, "created")
	}
	h.post("/waitlist", `{"email":"w9@example.com","consent":true}`, "X-Forwarded-For", "10.9.9.9, 203.0.113.7").expect(t, 429, "error")
}

// The budget is per client across every replica: the counter lives in Redis, not in the process, so a
// client that the load balancer spreads over two replicas gets the limit once, not twice.
func TestForms_RateLimit_IsSharedAcrossReplicas(t *testing.T) {
	cfg := formstest.Config()
	cfg.Forms.RateLimitPerMinute = perMinute(3)
	a := newHarness(t, harnessOpts{cfg: cfg})
	b := newHarness(t, harnessOpts{cfg: cfg, redis: a.redis})
	a.post("/waitlist", `{"email":"u1@example.com","consent":true}`).expect(t, 201, "created")
	b.post("/waitlist", `{"email":"u2@example.com","consent":true}`).expect(t, 201, "created")
	a.post("/waitlist", `{"email":"u3@example.com","consent":true}`).expect(t, 201, "created")
	b.post("/waitlist", `{"email":"u4@example.com","consent":true}`).expect(t, 429, "error")
	a.post("/waitlist", `{"email":"u5@example.com","consent":true}`).expect(t, 429, "error")
}

func TestForms_RateLimitZero_IsOff(t *testing.T) {
	h := newHarness(t, harnessOpts{}) // testConfig: 0
	for i := range 100 {
		h.post("/waitlist", fmt.Sprintf(`{"email":"u%d@example.com","consent":true}`, i)).expect(t, 201, "created")
	}
}

func TestForms_RateLimitDefault_Is60PerMinute(t *testing.T) {
	cfg := formstest.Config()
	cfg.Forms.RateLimitPerMinute = nil
	h := newHarness(t, harnessOpts{cfg: cfg})
	for i := range 60 {
		h.post("/waitlist", fmt.Sprintf(`{"email":"u%d@example.com","consent":true}`, i)).expect(t, 201, "created")
	}
	h.post("/waitlist", `{"email":"u60@example.com","consent":true}`).expect(t, 429, "error")
}

func TestForms_AllowedOriginsReloadedLive(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", validWaitlist, "Origin", "https://new.example").expect(t, 403, "error")
	cfg := formstest.Config()
	cfg.AllowedOrigins = append(cfg.AllowedOrigins, "https://new.example")
	h.src.Set(t, cfg)
	h.post("/waitlist", validWaitlist, "Origin", "https://new.example").expect(t, 201, "created")
	cfg = formstest.Config()
	cfg.AllowedOrigins = []string{"https://new.example"}
	h.src.Set(t, cfg)
	h.post("/waitlist", validWaitlist, "Origin", formstest.Origin).expect(t, 403, "error")
}

func TestForms_StoreStopped_Returns502Within2sThenRecovers(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")

	h.redis.Stop()
	for _, p := range []string{"/waitlist", "/contact"} {
		start := time.Now()
		body := `{"email":"b@example.com","consent":true}`
		if p == "/contact" {
			body = validContact
		}
		h.post(p, body).expect(t, 502, "error")
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: 502 after %s, want within 2s", p, d)
		}
	}
	h.redis.Restart()
	testwait.For(t, 5*time.Second, "the service to store again after Redis restarted", func() bool {
		return h.post("/waitlist", `{"email":"c@example.com","consent":true}`).code == 201
	})
	h.post("/contact", validContact).expect(t, 201, "created")
	if h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "store_error") < 1 {
		t.Fatal("store errors not counted")
	}
}

func TestForms_StoreHanging_Returns502Within2s(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")
	h.redis.Pause() // accepts connections, answers nothing
	defer h.redis.Resume()
	start := time.Now()
	h.post("/waitlist", `{"email":"b@example.com","consent":true}`).expect(t, 502, "error")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("502 after %s, want within 2s", d)
	}
	h.redis.Resume()
	testwait.For(t, 5*time.Second, "recovery after the store resumed", func() bool {
		a := h.post("/waitlist", `{"email":"c@example.com","consent":true}`)
		return a.code == 201 || a.code == 200
	})
}

func TestForms_OtherMethods_AreRefusedWithJSON(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.do(http.MethodGet, "/waitlist", map[string]string{"Origin": formstest.Origin}, "")
	if a.code != 405 || a.status != "error" {
		t.Fatalf("GET /waitlist: %d %q", a.code, a.raw)
	}
}

// /readyz reports the process, the store's state is StoreState (D55): with the store stopped the pod
// stays ready and answers the documented 502, with CORS headers a browser can read.
func TestForms_ReadyReportsTheProcess_StoreStateFollowsTheStore(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if err := h.svc.StoreState(t.Context()); err != nil {
		t.Fatal(err)
	}
	h.redis.Stop()
	if err := h.svc.StoreState(t.Context()); err == nil {
		t.Fatal("StoreState nil with the store stopped")
	}
	if err := h.svc.Ready(t.Context()); err != nil {
		t.Fatalf("Ready with the store stopped: %v, want nil (the process serves its 502)", err)
	}
	a := h.post("/waitlist", validWaitlist)
	a.expect(t, 502, "error")
	if got := a.header.Get("Access-Control-Allow-Origin"); got != formstest.Origin {
		t.Fatalf("502 with Access-Control-Allow-Origin %q, want %q", got, formstest.Origin)
	}
}
