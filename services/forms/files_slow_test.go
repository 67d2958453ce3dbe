package forms

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A file upload that takes longer than the server's read timeout — bytes coming steadily, as from a
// phone's slow uplink — is taken whole: the upload's body is read under a deadline that moves with the
// bytes (server.PacedBody), not the timeout that bounds every request's headers and body together. The
// server's read timeout is shortened to 400 ms, so the upload's 1 s is 2.5 of them; the pace is the
// client's ticker.
func TestFiles_AnUploadLongerThanTheReadTimeoutIsTaken(t *testing.T) {
	const readTimeout = 400 * time.Millisecond
	h := newFileHarnessWith(t, harnessOpts{readTimeout: readTimeout}, func(c *config.Config) {
		f := c.Forms.FindDeclared("apply")
		f.MaxFileBytes = 20 << 20
		f.Fields[3].MaxSize = 20 << 20
	})
	big := bytes.Repeat([]byte("slow uplink "), 160<<10/12)
	ct, body := multipartOf(t, field("name", "Ada"), file("cv", "cv.pdf", []byte("%PDF-1.4\n%âãÏÓ\n1 0 obj\n")), file("more", "big.bin", big))

	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second)) // bounds a broken test only
	fmt.Fprintf(conn, "POST /f/apply HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		h.addr, formstest.Origin, ct, len(body))
	start := time.Now()
	go func() {
		const first, chunk = 8 << 10, 16 << 10 // fasthttp reads a body's first 8 KiB with its headers
		if _, err := conn.Write(body[:first]); err != nil {
			return
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for sent := first; sent < len(body); sent += chunk {
			<-tick.C
			if _, err := conn.Write(body[sent:min(sent+chunk, len(body))]); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the server cut the upload: %v (after %v)", err, time.Since(start))
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusCreated || took < 2*readTimeout {
		t.Fatalf("answer %d after %v, want 201 after more than two read timeouts", resp.StatusCode, took)
	}
	recs := storedForm(t, h.harness, "apply")
	if len(recs) != 1 || len(recs[0].Files) != 2 || recs[0].Files[1].Size != int64(len(big)) || recs[0].Files[1].SHA256 != sum(big) {
		t.Fatalf("stored %+v", recs)
	}
}
