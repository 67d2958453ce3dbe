// Package demo serves /demo/ on the dev server: a page that signs in with the browser SDK
// (ServiceAuthClient) against the auth service and posts the contact and waitlist forms to the forms
// service, so that a newcomer who runs `make run` sees the whole product work. Production never mounts it.
package demo

import (
	"bytes"
	"context"
	"html"
	"net/url"
	"path"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/sdk"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Service is the demo page as a server.Service named "demo".
type Service struct {
	cfg    config.Source
	page   []byte
	assets map[string]asset
}

type asset struct {
	body        []byte
	contentType string
}

// New reads the embedded page and SDK bundle once; cfg gives the issuer the page signs in with.
func New(cfg config.Source) (*Service, error) {
	read := func(name string) ([]byte, error) { return sdk.Files.ReadFile(name) }
	page, err := read("demo/index.html")
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, page: page, assets: map[string]asset{}}
	for name, src := range map[string]string{
		"app.js":                     "demo/app.js",
		"app.css":                    "demo/app.css",
		"service-auth-client.min.js": "dist/service-auth-client.min.js",
		"service-auth-client.js":     "dist/service-auth-client.js",
	} {
		b, err := read(src)
		if err != nil {
			return nil, err
		}
		ct := "text/javascript; charset=utf-8"
		if path.Ext(name) == ".css" {
			ct = "text/css; charset=utf-8"
		}
		s.assets[name] = asset{body: b, contentType: ct}
	}
	return s, nil
}

// Name implements server.Service.
func (s *Service) Name() string { return "demo" }

// Ready implements server.Service: the page is in the binary.
func (s *Service) Ready(context.Context) error { return nil }

// redirectToDemo answers GET / on the dev server: someone who opens the address `make run` printed lands
// on the demo instead of a JSON 404.
func (s *Service) redirectToDemo(c *fiber.Ctx) error {
	return c.Redirect("/demo/", fiber.StatusFound)
}

// servePageWithSlash answers /demo/, and sends /demo there: routing is not strict, and the page's
// relative URLs need the slash.
func (s *Service) servePageWithSlash(c *fiber.Ctx) error {
	if c.Path() == "/demo" {
		return c.Redirect("/demo/", fiber.StatusFound)
	}
	return s.servePage(c)
}

// servePage answers the page with the issuer filled in, so that it also works when opened on another host
// name (127.0.0.1) than the issuer's (localhost).
func (s *Service) servePage(c *fiber.Ctx) error {
	issuer := s.issuer()
	page := bytes.Replace(s.page, []byte(`data-auth-base=""`), []byte(`data-auth-base="`+html.EscapeString(issuer)+`"`), 1)
	connect := "'self'"
	if u, err := url.Parse(issuer); err == nil && u.Host != "" {
		connect += " " + u.Scheme + "://" + u.Host
	}
	setHeaders(c, connect)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(page)
}

func (s *Service) serveAsset(c *fiber.Ctx) error {
	a, ok := s.assets[c.Params("file")]
	if !ok {
		return fiber.ErrNotFound
	}
	setHeaders(c, "'none'")
	c.Set(fiber.HeaderContentType, a.contentType)
	return c.Send(a.body)
}

func (s *Service) issuer() string {
	cfg := s.cfg.Current()
	if cfg.Auth.Issuer != "" {
		return cfg.Auth.Issuer
	}
	return cfg.PublicURL
}

// setHeaders: the page may run only its own scripts and talk only to the forms and auth services; the
// callback URL carries a code, so no Referer leaves the page; nothing is cached across sign-ins.
func setHeaders(c *fiber.Ctx, connect string) {
	c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src "+
		connect+"; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("Cache-Control", "no-cache")
}
