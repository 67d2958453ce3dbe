package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// origin is the one allowed origin of every forms process in this suite.
const origin = "https://example.com"

// formsConfig is a forms service configuration on the given redis section (YAML, already indented
// under "redis:"), with rate limiting off unless extra sets it.
func formsConfig(redisSection, extra string) string {
	return "logLevel: warn\nallowedOrigins: [\"" + origin + "\"]\nredis:\n" + redisSection +
		"forms:\n  rateLimitPerMinute: 0\n" + extra
}

func redisURLSection(url string) string { return "  url: " + url + "\n" }

func redisClusterSection(addrs []string) string {
	return "  cluster: true\n  addrs: [" + strings.Join(addrs, ", ") + "]\n"
}

// answer is one response as the test sees it.
type answer struct {
	status  int
	body    string
	elapsed time.Duration
	err     error
}

// formsClient posts JSON to a forms service the way a browser does (Origin, content-type).
type formsClient struct {
	base string
	c    *http.Client
}

func newFormsClient(base string, conns int) *formsClient {
	return &formsClient{base: base, c: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true},
	}}
}

func (f *formsClient) post(path string, body any, header ...string) answer {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	res, err := f.c.Do(req)
	if err != nil {
		return answer{err: err, elapsed: time.Since(start)}
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, body: string(rb), elapsed: time.Since(start)}
}

func (f *formsClient) close() { f.c.CloseIdleConnections() }

func waitlistBody(email string) map[string]any {
	return map[string]any{"email": email, "consent": true, "name": "Reliability Test", "role": "member", "size": "51–250"}
}

func contactBody(email, text string) map[string]any {
	return map[string]any{"name": "Reliability Test", "email": email, "topic": "support", "message": text}
}

// exported reads what the operating team would export: `formsservice export waitlist|contact --format
// jsonl` against the same store, one JSON object per record.
func exported(t testing.TB, what, configYAML string) []map[string]any {
	t.Helper()
	cfg := writeTemp(t, "export.yaml", configYAML)
	bin := formsservice(t) // built before the command's time starts: a cold build takes longer than the command may
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "export", what, "--format", "jsonl", "-config", cfg)
	cmd.Env = filteredEnv("REDIS_URL", "FORMSSERVICE_CONFIG", "CONFIG")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("formsservice export %s: %v\n%s", what, err, stderr.String())
	}
	var recs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		recs = append(recs, m)
	}
	return recs
}

// countBy counts records by one string field (lower-cased).
func countBy(recs []map[string]any, field string) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		out[strings.ToLower(fmt.Sprint(r[field]))]++
	}
	return out
}
