package forms

import (
	"context"
	"errors"
	"mime"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/files"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/objectstore"
)

// DownloadPath is the route of a file's signed download link (files.Links, docs/forms.md "Files").
const DownloadPath = "/f/:form/files/:id"

var (
	bodyLinkInvalid = []byte(`{"status":"error","error":"invalid_link"}`)
	bodyLinkExpired = []byte(`{"status":"error","error":"link_expired"}`)
	bodyNoFile      = []byte(`{"status":"error","error":"no_such_file"}`)
)

// downloadFile serves GET /f/<form>/files/<id>?expires=…&sig=…: the link a mail or webhook carries to
// a submission's file. The signature (HMAC of form, id and expiry under forms.files.linkKeyFile's key)
// must match (403 invalid_link) and the expiry be ahead (403 link_expired). A console's link is
// GET /f/<form>/files/<id>?grant=… instead: a grant of this file the admin API put in the store, used up
// by this request (403 invalid_link when there is none, D83). The object is streamed
// from the bucket as an attachment that a browser neither renders nor sniffs. 404 when the file was
// erased, 502 when the bucket cannot be reached.
func (s *Service) downloadFile(c *fiber.Ctx) error {
	lc := s.live()
	h := &c.Response().Header
	h.Set(fiber.HeaderCacheControl, "private, no-store")
	h.Set("Referrer-Policy", "no-referrer")
	answer := func(status int, body []byte) error {
		c.Status(status)
		h.SetContentType(fiber.MIMEApplicationJSON)
		c.Response().SetBodyRaw(body)
		return nil
	}
	form, id := c.Params("form"), c.Params("id")
	lf := lc.files
	if lf == nil || !files.ValidID(id) {
		return answer(fiber.StatusNotFound, bodyNoFile)
	}
	if lf.err != nil {
		s.log.Warn("serving a file link failed: forms.files cannot be used", "err", lf.err)
		return answer(fiber.StatusBadGateway, bodyError)
	}
	if grant := c.Query("grant"); grant != "" {
		// A console's link (D83): one download, granted by the admin API in the store for minutes.
		key, err := store.TakeFileGrant(c.UserContext(), s.rdb, grant)
		switch {
		case errors.Is(err, store.ErrNoFileGrant) || err == nil && key != lf.store.Key(form, id):
			return answer(fiber.StatusForbidden, bodyLinkInvalid)
		case err != nil:
			s.log.Warn("serving a file link failed: the store did not answer", "err", err)
			return answer(fiber.StatusBadGateway, bodyError)
		}
	} else {
		switch err := lf.links.Check(form, id, c.Query("expires"), c.Query("sig"), s.now()); {
		case errors.Is(err, files.ErrExpiredLink):
			return answer(fiber.StatusForbidden, bodyLinkExpired)
		case err != nil:
			return answer(fiber.StatusForbidden, bodyLinkInvalid)
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), uploadTimeout)
	r, obj, err := lf.store.Open(ctx, lf.store.Key(form, id))
	switch {
	case errors.Is(err, objectstore.ErrNoObject):
		cancel()
		return answer(fiber.StatusNotFound, bodyNoFile)
	case err != nil:
		cancel()
		s.log.Warn("serving a file link failed: the bucket did not answer", "err", err)
		return answer(fiber.StatusBadGateway, bodyError)
	}
	// The stream outlives this handler (fasthttp writes it after); closing it ends the request's context.
	c.Context().SetBodyStream(&closeWith{r, cancel}, int(obj.Size))
	h.SetContentType(obj.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set(fiber.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": files.SafeName(obj.Metadata["filename"])}))
	return nil
}

// closeWith is a body stream that also ends its context when fasthttp closes it.
type closeWith struct {
	objectReader
	cancel context.CancelFunc
}

type objectReader interface {
	Read([]byte) (int, error)
	Close() error
}

func (c *closeWith) Close() error {
	err := c.objectReader.Close()
	c.cancel()
	return err
}
