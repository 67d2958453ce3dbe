package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// loadSpec is one load run against one URL path.
type loadSpec struct {
	addr     string        // host:port, loopback only
	path     string        // /waitlist, /contact
	kind     string        // body template: waitlist, contact or declared
	origin   string        // Origin header
	conns    int           // concurrent keep-alive connections
	warmup   time.Duration // not measured
	duration time.Duration // measured
	rate     float64       // requests per second in total; 0 = as fast as possible (closed loop)
	want     int           // expected status code

	// build, when set, writes connection conn's n-th request instead of a forms POST of kind; read, when
	// set, is given each answer's status and body (a token client keeps its refresh token this way).
	build func(dst []byte, conn int, n int64) []byte
	read  func(conn int, status int, body []byte)
}

// loadResult summarises a run.
type loadResult struct {
	requests   int
	perSecond  float64
	p50, p99   time.Duration
	unexpected map[int]int     // status -> count, for statuses other than want (-1: transport errors)
	latencies  []time.Duration // sorted
}

// merge combines runs of the same length into one result.
func merge(rs []loadResult, each time.Duration) loadResult {
	var all []time.Duration
	m := loadResult{unexpected: map[int]int{}}
	for _, r := range rs {
		all = append(all, r.latencies...)
		for k, v := range r.unexpected {
			m.unexpected[k] += v
		}
	}
	slices.Sort(all)
	m.requests = len(all)
	m.perSecond = float64(len(all)) / (each * time.Duration(len(rs))).Seconds()
	m.p50, m.p99 = percentile(all, 50), percentile(all, 99)
	return m
}

// percentile is the p/100 quantile of sorted latencies, permille the p/1000 one.
func percentile(sorted []time.Duration, p int) time.Duration { return permille(sorted, 10*p) }

func permille(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/1000)]
}

// requestSeq numbers requests across every run of the process, so each carries a new address.
var requestSeq atomic.Int64

// runLoad drives spec.conns connections. In closed-loop mode each connection sends its next request as
// soon as the previous answer arrived; in rate mode requests are scheduled at fixed intervals and
// latency is measured from the scheduled time, so a stalled server is charged for the requests it
// delayed (no coordinated omission).
func runLoad(spec loadSpec) (loadResult, error) {
	if host, _, err := net.SplitHostPort(spec.addr); err != nil || !net.ParseIP(host).IsLoopback() {
		return loadResult{}, fmt.Errorf("load runs only against loopback addresses, not %q", spec.addr)
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		statuses  = map[int]int{}
		wg        sync.WaitGroup
	)
	start := time.Now()
	measureFrom := start.Add(spec.warmup)
	end := measureFrom.Add(spec.duration)
	errc := make(chan error, spec.conns)
	for w := range spec.conns {
		wg.Go(func() {
			lat, st, err := connLoop(spec, w, &requestSeq, start, measureFrom, end)
			if err != nil {
				errc <- err
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			for k, v := range st {
				statuses[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil && len(latencies) == 0 {
		return loadResult{}, err
	}
	slices.Sort(latencies)
	res := loadResult{requests: len(latencies), unexpected: map[int]int{}, latencies: latencies}
	res.perSecond = float64(len(latencies)) / spec.duration.Seconds()
	res.p50, res.p99 = percentile(latencies, 50), percentile(latencies, 99)
	for code, n := range statuses {
		if code != spec.want {
			res.unexpected[code] = n
		}
	}
	return res, nil
}

func connLoop(spec loadSpec, w int, seq *atomic.Int64, start, measureFrom, end time.Time) ([]time.Duration, map[int]int, error) {
	lat := make([]time.Duration, 0, 1<<16)
	statuses := map[int]int{}
	var conn net.Conn
	var br *bufio.Reader
	var req, respBody []byte
	var interval time.Duration
	if spec.rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(spec.conns) / spec.rate)
	}
	next := start.Add(time.Duration(w) * interval / time.Duration(max(spec.conns, 1)))
	for {
		scheduled := time.Now()
		if interval > 0 {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			scheduled = next
			next = next.Add(interval)
		}
		if scheduled.After(end) {
			break
		}
		if conn == nil {
			c, err := net.DialTimeout("tcp", spec.addr, 2*time.Second)
			if err != nil {
				return lat, statuses, err
			}
			conn, br = c, bufio.NewReaderSize(c, 4096)
		}
		if spec.build != nil {
			req = spec.build(req[:0], w, seq.Add(1))
		} else {
			req = buildRequest(req[:0], spec, seq.Add(1))
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		var body *[]byte
		if spec.read != nil {
			body = &respBody
		}
		code, keep, err := roundTrip(conn, br, req, body)
		if err == nil && spec.read != nil {
			spec.read(w, code, respBody)
		}
		done := time.Now()
		if err != nil {
			conn.Close()
			conn = nil
			code = -1
		} else if !keep {
			conn.Close()
			conn = nil
		}
		if scheduled.Before(measureFrom) {
			continue
		}
		if done.After(end) && interval == 0 {
			break
		}
		lat = append(lat, done.Sub(scheduled))
		statuses[code]++
	}
	if conn != nil {
		conn.Close()
	}
	return lat, statuses, nil
}

// buildRequest appends one POST with a unique address (a waitlist must not answer "duplicate").
func buildRequest(dst []byte, spec loadSpec, n int64) []byte {
	var body []byte
	switch spec.kind {
	case "contact":
		body = append(body, `{"name":"Load Test","email":"load`...)
		body = strconv.AppendInt(body, n, 10)
		body = append(body, `@example.com","organization":"Bench Club","topic":"sales","message":"Hello team, we would like to know more about pricing for a club of 120 members. Thanks!"}`...)
	case "declared":
		body = append(body, `{"company":"Bench Club","email":"load`...)
		body = strconv.AppendInt(body, n, 10)
		body = append(body, `@example.com","role":"manager","budget":12000,"start":"2027-01-15","interests":["forms","health"],"notes":"We would like a demo for a club of 120 members.","consent":true}`...)
	default:
		body = append(body, `{"email":"load`...)
		body = strconv.AppendInt(body, n, 10)
		body = append(body, `@example.com","consent":true,"name":"Load Test","role":"member","size":"51-250"}`...)
	}
	dst = append(dst, "POST "...)
	dst = append(dst, spec.path...)
	dst = append(dst, " HTTP/1.1\r\nHost: bench\r\nOrigin: "...)
	dst = append(dst, spec.origin...)
	dst = append(dst, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

var errBadResponse = errors.New("bad response")

// roundTrip writes req and reads one response: status line, headers (Content-Length, Transfer-Encoding,
// Connection), body (into *body when body is not nil, else discarded). A chunked body is decoded: a
// server may chunk any answer that outgrows its write buffer (net/http does past 2 KiB).
func roundTrip(conn net.Conn, br *bufio.Reader, req []byte, body *[]byte) (code int, keepAlive bool, err error) {
	if _, err = conn.Write(req); err != nil {
		return 0, false, err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, false, errBadResponse
	}
	code, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, errBadResponse
	}
	length, keepAlive, chunked := 0, true, false
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		if len(line) <= 2 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, _ = strconv.Atoi(string(v))
		case bytes.EqualFold(k, []byte("Transfer-Encoding")) && bytes.EqualFold(v, []byte("chunked")):
			chunked = true
		case bytes.EqualFold(k, []byte("Connection")) && bytes.EqualFold(v, []byte("close")):
			keepAlive = false
		}
	}
	if chunked {
		return code, keepAlive, readChunked(br, body)
	}
	if body != nil {
		*body = append((*body)[:0], make([]byte, length)...)
		if _, err = io.ReadFull(br, *body); err != nil {
			return 0, false, err
		}
	} else if _, err = br.Discard(length); err != nil {
		return 0, false, err
	}
	return code, keepAlive, nil
}

// readChunked reads a chunked body and its trailer, into *body when body is not nil.
func readChunked(br *bufio.Reader, body *[]byte) error {
	var dst io.Writer = io.Discard
	var buf *bytes.Buffer
	if body != nil {
		buf = bytes.NewBuffer((*body)[:0])
		dst = buf
	}
	if _, err := io.Copy(dst, httputil.NewChunkedReader(br)); err != nil {
		return err
	}
	for { // trailer fields, then the empty line that ends the message
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
	}
	if buf != nil {
		*body = buf.Bytes()
	}
	return nil
}
