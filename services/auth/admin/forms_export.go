package admin

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/clientip"
)

// Exports stream: the rows are written to the connection as they are read from the store, a page at a
// time, so that the server's memory does not grow with them (docs/architecture.md D63). Every other
// answer of the API is a net/http handler mounted through Fiber's adaptor, which holds the whole body
// until the handler returns; an export runs its checks the same way (the token, the scope, the
// parameters, answered as every route answers them) and then hands the rows to fasthttp's body stream
// writer, which sends them chunked.

// exportIdle is how long a reader may take the next part of an export before the connection is closed;
// exportLimit bounds a whole export's store work.
const (
	exportIdle  = 30 * time.Second
	exportLimit = 30 * time.Minute
)

// exportRun writes an export's rows to w; an error other than the writer's means the rows stopped.
type exportRun func(ctx context.Context, w io.Writer) error

// exportCheck answers the request's refusals (and returns nil), or sets the answer's headers and
// returns what writes its rows.
type exportCheck func(w http.ResponseWriter, r *http.Request, p bearer.Principal) exportRun

// streamExport is the Fiber handler of an export route.
func (h *Handler) streamExport(check exportCheck) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var run exportRun
		guarded := h.o.Bearer.Handle(formsRead, func(w http.ResponseWriter, r *http.Request, p bearer.Principal) { run = check(w, r, p) })
		ctx := audit.WithOrigin(context.Background(), clientip.Addr(c, h.o.Realm.Current().Proxies), string(c.Request().Header.UserAgent()))
		err := adaptor.HTTPHandlerFunc(func(w http.ResponseWriter, r *http.Request) { guarded.ServeHTTP(w, r.WithContext(ctx)) })(c)
		if err != nil || run == nil || c.Method() == fiber.MethodHead {
			return err
		}
		conn, log := c.Context().Conn(), h.o.Log
		c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
			rctx, cancel := context.WithTimeout(ctx, exportLimit)
			defer cancel()
			out := &deadlineWriter{w: bw, conn: conn}
			err := run(rctx, out)
			if err == nil {
				err = bw.Flush()
			}
			if err != nil && !manage.IsWriteError(err) && !out.failed.Load() {
				// The rows stopped: the chunked body is cut off without its end, so the reader sees a
				// broken answer rather than a short export that looks whole.
				log.Error("admin API: an export stopped", "err", err)
				_ = conn.Close()
			}
		})
		return nil
	}
}

// deadlineWriter moves the connection's write deadline on as the export goes (the server's write
// timeout would cut a long one), at most once a second.
type deadlineWriter struct {
	w      *bufio.Writer
	conn   net.Conn
	moved  time.Time
	failed atomic.Bool
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if now := time.Now(); now.Sub(d.moved) > time.Second {
		d.moved = now
		_ = d.conn.SetWriteDeadline(now.Add(exportIdle))
	}
	n, err := d.w.Write(p)
	if err != nil {
		d.failed.Store(true)
	}
	return n, err
}

// exportHeaders sets an export's answer: its type, a file name, never stored.
func exportHeaders(w http.ResponseWriter, name, format string) {
	types := map[string]string{store.FormatCSV: "text/csv; charset=utf-8", store.FormatJSONL: "application/jsonl", store.FormatJSON: "application/json"}
	w.Header().Set("Content-Type", types[format])
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+"-"+time.Now().UTC().Format("2006-01-02")+"."+format+`"`)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
}

// exportSubmissions is GET /admin/v1/forms/{form}/submissions/export?format=&folder=&q=&since=&until=:
// the form's submissions, oldest first, as CSV, JSON lines or one JSON array.
func (h *Handler) exportSubmissions(w http.ResponseWriter, r *http.Request, p bearer.Principal) exportRun {
	form := formOf(r)
	q, ok := submissionsQuery(w, r)
	if !ok {
		return nil
	}
	if q.State != "" {
		badRequest(w, "state", "an export takes folder, q, since and until; not state")
		return nil
	}
	eq := manage.ExportQuery{Folder: q.Folder, Format: r.URL.Query().Get("format"), Since: q.Since, Until: q.Until, Text: q.Text}
	if eq.Format == "" {
		eq.Format = store.FormatCSV
	}
	if err := h.o.Forms.CheckExport(r.Context(), form, &eq); err != nil {
		h.formsFail(w, r, err)
		return nil
	}
	exportHeaders(w, form+"-"+eq.Folder, eq.Format)
	op := h.formsOperator(p)
	return func(ctx context.Context, out io.Writer) error {
		_, err := op.Export(ctx, out, form, eq)
		return err
	}
}

// exportWaitlist is GET /admin/v1/waitlist/entries/export?format=&state=&q=: the waitlist's entries,
// oldest first.
func (h *Handler) exportWaitlist(w http.ResponseWriter, r *http.Request, p bearer.Principal) exportRun {
	v := r.URL.Query()
	q := manage.WaitlistExportQuery{Format: v.Get("format"), State: v.Get("state"), Text: v.Get("q")}
	if q.Format == "" {
		q.Format = store.FormatCSV
	}
	if err := manage.CheckWaitlistExport(q); err != nil {
		h.formsFail(w, r, err)
		return nil
	}
	exportHeaders(w, "waitlist", q.Format)
	op := h.formsOperator(p)
	return func(ctx context.Context, out io.Writer) error {
		_, err := op.ExportWaitlist(ctx, out, q)
		return err
	}
}
