package forms

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/files"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/objectstore"
	"github.com/formsservice/formsservice/services/platform/server"
)

// CodeFileTooLarge is a file over its field's maxSize (docs/forms.md "Files").
const CodeFileTooLarge = "too_large"

// Bounds of a body with files beyond its files: the multipart framing of its parts, and how many parts
// it may have (a hostile body of endless empty parts is cut off).
const (
	uploadFraming  = 64 << 10
	maxUploadParts = 1000
	// uploadTimeout bounds one submission's uploads: a client that trickles its file holds a connection
	// and a part buffer for at most this long.
	uploadTimeout = 5 * time.Minute
	// minUploadRate is the slowest average, in bytes a second, at which an upload's body is read to its
	// end (server.PacedBody): a body may take the server's read timeout plus its length at this rate,
	// and no more than the read timeout between two bytes.
	minUploadRate = 64 << 10
)

// liveFiles is forms.files compiled: the bucket and the link signer, or why they cannot be used (an
// unreadable or short key file, no S3 credentials): the forms with file fields then answer 502.
type liveFiles struct {
	store *files.Store
	links *files.Links
	ttl   time.Duration
	err   error
}

func compileFiles(cfg *config.FormFiles, env objectstore.Env) *liveFiles {
	if cfg == nil {
		return nil
	}
	lf := &liveFiles{ttl: cfg.TTL()}
	client, err := objectstore.New(env)
	if err != nil {
		lf.err = err
		return lf
	}
	lf.store = files.New(client, cfg)
	key, err := os.ReadFile(cfg.LinkKeyFile)
	if err != nil {
		lf.err = errors.New("forms.files.linkKeyFile cannot be read")
		return lf
	}
	if lf.links, err = files.NewLinks([]byte(strings.TrimSpace(string(key)))); err != nil {
		lf.err = err
	}
	return lf
}

// filesForm is the declared form a request posts files to: a multipart body for a form with a file
// field. Its body is streamed part by part (receiveFiles) rather than read through the 16 KB limit.
func filesForm(c *fiber.Ctx, ep endpoint, lc *liveConfig) *config.DeclaredForm {
	if ep != declaredEndpoint || lc.files == nil || formatOf(c.Request().Header.ContentType()).kind != kindMultipart {
		return nil
	}
	form := lc.cfg.Forms.FindDeclared(c.Params("form"))
	if form == nil || !form.HasFiles() {
		return nil
	}
	return form
}

// received is what receiveFiles read: the files it stored, and the text fields re-encoded as a
// urlencoded body for decodeDeclared (which reads both form encodings alike).
type received struct {
	files []store.File
	text  []byte
}

// receiveFailure is why receiveFiles stopped: the answer to give. The files stored so far are removed.
type receiveFailure struct {
	status int    // 400, 413 or 502
	field  string // the field named in a 400 (with code)
	code   string
	err    error // the store's error (502), for the log
	// gone: the body stopped short (the client went away, or its connection broke); the connection is
	// closed, as for a body that cannot be read (admit).
	gone bool
}

// receiveFiles reads a multipart body with files from the request stream: each file part streamed into
// the bucket (files.Store.Put: bounded buffers, counted, hashed, sniffed), each text part kept, within
// MaxBodyBytes of text and the form's maxFileBytes of files. On failure nothing it stored remains.
func (s *Service) receiveFiles(c *fiber.Ctx, lf *liveFiles, form *config.DeclaredForm, boundary string) (rcv received, fail *receiveFailure) {
	defer func() {
		if fail != nil && len(rcv.files) > 0 {
			s.removeFiles(lf, rcv.files)
			rcv.files = nil
		}
	}()
	if lf.err != nil {
		return rcv, &receiveFailure{status: fiber.StatusBadGateway, err: lf.err}
	}
	// Read under a deadline that moves with the bytes, not the server's 10 s for the whole request: a
	// large file on a slow uplink takes longer (server.PacedBody).
	stream := server.PacedBody(c, form.FileBytes()+MaxBodyBytes+uploadFraming, minUploadRate)
	if boundary == "" {
		return rcv, &receiveFailure{status: fiber.StatusBadRequest, field: BodyField, code: CodeInvalidType}
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), uploadTimeout)
	defer cancel()
	mr := multipart.NewReader(stream, boundary)
	room := form.FileBytes()
	counts := map[string]int{}
	textBytes := 0 // the text fields' names and values, bounded as a body without files is
	unreadable := &receiveFailure{status: fiber.StatusBadRequest, field: BodyField, code: CodeInvalidType}
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			return rcv, nil
		}
		if err != nil || parts >= maxUploadParts {
			return rcv, unreadable
		}
		_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		name := params["name"]
		if err != nil || name == "" {
			return rcv, unreadable
		}
		filename, isFile := params["filename"]
		if !isFile {
			// A text field, re-encoded for decodeDeclared; the text is bounded as a body without files is.
			value, err := io.ReadAll(io.LimitReader(p, MaxBodyBytes+1))
			if err != nil {
				return rcv, unreadable
			}
			if textBytes += len(name) + len(value); textBytes > MaxBodyBytes {
				return rcv, &receiveFailure{status: fiber.StatusRequestEntityTooLarge}
			}
			rcv.text = append(rcv.text, url.QueryEscape(name)+"="+url.QueryEscape(string(value))+"&"...)
			continue
		}
		// A file input left empty sends a part with filename="" and no content: nothing was sent.
		var first [1]byte
		n, _ := io.ReadFull(p, first[:])
		if filename == "" && n == 0 {
			continue
		}
		fd := fieldOf(form, name)
		if fd == nil || fd.Type != config.FieldFile {
			return rcv, unreadable // a file for a field that takes none: refused as a file always was
		}
		if counts[name]++; counts[name] > fd.FileCount() {
			return rcv, &receiveFailure{status: fiber.StatusBadRequest, field: name, code: CodeOutOfRange}
		}
		f, err := lf.store.Put(ctx, form.ID, fd, filename, io.MultiReader(bytes.NewReader(first[:n]), p), room)
		switch {
		case err == nil:
			rcv.files = append(rcv.files, f)
			room -= f.Size
		case errors.Is(err, files.ErrTooLarge):
			return rcv, &receiveFailure{status: fiber.StatusBadRequest, field: name, code: CodeFileTooLarge}
		case errors.Is(err, files.ErrType):
			return rcv, &receiveFailure{status: fiber.StatusBadRequest, field: name, code: CodeInvalidType}
		case errors.Is(err, files.ErrTotalTooLarge):
			return rcv, &receiveFailure{status: fiber.StatusRequestEntityTooLarge}
		case errors.Is(err, files.ErrRead):
			return rcv, &receiveFailure{status: fiber.StatusBadRequest, field: BodyField, code: CodeInvalidType, gone: true}
		default:
			return rcv, &receiveFailure{status: fiber.StatusBadGateway, err: err}
		}
	}
}

// removeFiles deletes the objects of a submission that was not stored (refused, replayed, a duplicate,
// a honeypot's), on its own clock: the request's may have ended with the client.
func (s *Service) removeFiles(lf *liveFiles, fs []store.File) {
	if len(fs) == 0 || lf == nil || lf.store == nil {
		return
	}
	if err := lf.store.RemoveFiles(context.Background(), fs); err != nil {
		s.log.Warn("removing the files of a submission that was not stored failed; they remain in the bucket",
			"files", len(fs), "err", err)
	}
}

// answerReceiveFailure answers receiveFiles' failure, and ends the unread rest of the body.
func (s *Service) answerReceiveFailure(c *fiber.Ctx, f *receiveFailure) {
	const ep = declaredEndpoint
	switch {
	case f.status == fiber.StatusBadGateway:
		s.replyStored(c, ep, store.Result{}, f.err)
	case f.status == fiber.StatusRequestEntityTooLarge:
		s.refuse(c, refusedBodyTooLarge)
		s.reply(c, ep, resultTooLarge, fiber.StatusRequestEntityTooLarge, bodyError)
	case f.gone:
		c.Context().SetConnectionClose()
		s.replyInvalid(c, ep, resultBadRequest, Errors{f.field: f.code})
		return
	default:
		s.replyInvalid(c, ep, resultInvalid, Errors{f.field: f.code})
	}
	finishUnread(c)
}

// fileSweepEvery is how often the service deletes the objects of erased submissions' files.
const fileSweepEvery = 30 * time.Second

// sweepFiles deletes, every fileSweepEvery until ctx ends, the objects that erasure and retention
// queued (store.FileErasures). Every replica sweeps; deleting is idempotent.
func (s *Service) sweepFiles(ctx context.Context) {
	t := time.NewTicker(fileSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.SweepFileErasures(ctx); err != nil {
				s.log.Warn("deleting the files of erased submissions failed; retrying later", "err", err)
			}
		}
	}
}

// SweepFileErasures deletes the queued objects now, and returns how many it deleted.
func (s *Service) SweepFileErasures(ctx context.Context) (int, error) {
	lf := s.live().files
	if lf == nil {
		return 0, nil // nothing was ever stored here: no forms.files
	}
	if lf.err != nil {
		return 0, lf.err
	}
	done := 0
	for {
		keys, err := store.PendingFileErasures(ctx, s.rdb, 100)
		if err != nil || len(keys) == 0 {
			return done, err
		}
		if err := lf.store.Remove(ctx, keys...); err != nil {
			return done, err
		}
		if err := store.FileErased(ctx, s.rdb, keys...); err != nil {
			return done, err
		}
		done += len(keys)
	}
}
