package interop_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// browser plays a person's browser for the relying parties that run on a server (Go, Node,
// oauth2-proxy): a cookie jar, redirects followed one by one, and the hosted sign-in page filled in and
// submitted like a person would. The browser row (oidc-client-ts) uses real Chromium instead.
type browser struct {
	t *testing.T
	c *http.Client
	// signedOut: the person does not sign in when the hosted page shows; visit returns that page.
	signedOut bool
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, c: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// page is one answer the browser got.
type page struct {
	URL    *url.URL
	Status int
	Header http.Header
	Body   string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return page{URL: req.URL, Status: res.StatusCode, Header: res.Header, Body: string(body)}
}

func (b *browser) get(u string) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// visit opens u and follows redirects, signing in on the hosted page when it shows (and confirming a
// sign-out when asked), until a redirect leads to a URL that starts with stopAt — returned without being
// followed — or an answer that is neither a redirect nor one of our pages, which is returned as the
// last page.
func (b *browser) visit(u, stopAt string) (*url.URL, page) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	for range 20 {
		p := b.do(req)
		switch {
		case p.Status >= 300 && p.Status < 400:
			next, err := p.URL.Parse(p.Header.Get("Location"))
			if err != nil || p.Header.Get("Location") == "" {
				b.t.Fatalf("redirect %d from %s with Location %q", p.Status, p.URL, p.Header.Get("Location"))
			}
			if stopAt != "" && strings.HasPrefix(next.String(), stopAt) {
				return next, p
			}
			req, _ = http.NewRequest(http.MethodGet, next.String(), nil)
		case p.Status == http.StatusOK && formWith(p, "signin") != nil && !b.signedOut:
			f := formWith(p, "signin")
			f.fields.Set("email", email)
			f.fields.Set("password", password)
			req = f.request()
		case p.Status == http.StatusOK && formWith(p, "") != nil && strings.Contains(p.URL.Path, "/oauth2/logout"):
			req = formWith(p, "").request() // "Sign out?" — the person confirms
		default:
			return p.URL, p
		}
	}
	b.t.Fatalf("more than 20 steps from %s", u)
	return nil, page{}
}

// form is an HTML form of a page: where it posts and its hidden fields.
type form struct {
	action *url.URL
	fields url.Values
}

func (f *form) request() *http.Request {
	req, _ := http.NewRequest(http.MethodPost, f.action.String(), strings.NewReader(f.fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// formWith finds the POST form whose hidden "action" field is action (the hosted page has several:
// sign-in, Cancel, sign-up), or, for action "", the first POST form. The HTML parser decodes the
// entities in attribute values.
func formWith(p page, action string) *form {
	doc, err := html.Parse(strings.NewReader(p.Body))
	if err != nil {
		return nil
	}
	var found *form
	var walk func(n *html.Node, cur *form)
	walk = func(n *html.Node, cur *form) {
		if found != nil {
			return
		}
		if n.Type == html.ElementNode && n.Data == "form" && strings.EqualFold(attr(n, "method"), "post") {
			target, err := p.URL.Parse(attr(n, "action"))
			if err != nil {
				return
			}
			cur = &form{action: target, fields: url.Values{}}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c, cur)
			}
			if cur.fields.Get("action") == action || action == "" {
				found = cur
			}
			return
		}
		if cur != nil && n.Type == html.ElementNode && n.Data == "input" && attr(n, "type") == "hidden" {
			cur.fields.Set(attr(n, "name"), attr(n, "value"))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, cur)
		}
	}
	walk(doc, nil)
	return found
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
