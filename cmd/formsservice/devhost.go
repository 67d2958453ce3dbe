//go:build !formsonly

package main

import (
	"cmp"
	"net"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// toIssuerHost sends a browser that opens the dev server on 127.0.0.1 or [::1] to the same page on its
// issuer, http://localhost:<port> (D74): the session cookies and passkeys live in the issuer's origin,
// so a person who typed 127.0.0.1:8080 (the old address, or a habit) gets a product that signs in and
// offers passkeys. Only page loads move (GET or HEAD with Sec-Fetch-Mode: navigate, which browsers send
// to loopback addresses); API calls, form posts and tools (curl) are answered where they are sent. An
// issuer the developer set (publicURL, FORMSSERVICE_PUBLIC_URL) that is not localhost moves nothing.
func toIssuerHost(cfg config.Source) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if (c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead) || c.Get("Sec-Fetch-Mode") != "navigate" {
			return c.Next()
		}
		cur := cfg.Current()
		iss, err := url.Parse(cmp.Or(cur.Auth.Issuer, cur.PublicURL))
		if err != nil || iss.Scheme != "http" || iss.Hostname() != "localhost" {
			return c.Next()
		}
		host, port, err := net.SplitHostPort(string(c.Request().Host()))
		if err != nil {
			host, port = strings.Trim(string(c.Request().Host()), "[]"), "80"
		}
		if (host != "127.0.0.1" && host != "::1") || port != cmp.Or(iss.Port(), "80") {
			return c.Next()
		}
		return c.Redirect("http://"+iss.Host+string(c.Request().URI().RequestURI()), fiber.StatusFound)
	}
}
