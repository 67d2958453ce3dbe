// Package devmail is the dev server's mail sink: an Outbox that keeps the last mails in memory instead
// of sending them, logs each one (recipients, subject and every link, so a person can click a
// verification link from the terminal), and serves them at /dev/mail/ (text and HTML parts, links
// clickable). Only `formsservice dev` mounts it: production never logs a mail's links, which carry
// one-time tokens.
package devmail

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/html"

	"github.com/formsservice/formsservice/services/platform/mail"
)

// DefaultMax is how many mails an Outbox keeps when Options.Max is 0.
const DefaultMax = 100

// DefaultFrom is the sender of a dev mail without one.
const DefaultFrom = "formsservice dev <dev@formsservice.localhost>"

// Options configure New.
type Options struct {
	// Max bounds the outbox: the oldest mail goes when a new one would pass it. Default DefaultMax.
	Max int
	// Logger gets one line per mail; nil logs nothing.
	Logger *slog.Logger
	// BaseURL is where the dev server is reached, for the "view" link in the log (http://localhost:8080).
	BaseURL string
	// Defaults apply to every mail, as a relay's would; From defaults to DefaultFrom.
	Defaults mail.Defaults
}

// Outbox is a mail.Sender that keeps what it is sent, and the dev mail page that shows it. Its Send
// prepares and composes each mail exactly as the SMTP sender would, so a mail the relay would refuse
// to compose fails here too.
type Outbox struct {
	o     Options
	tmpl  *template.Template
	style string // the CSP hash of the page's one inline stylesheet

	mu    sync.Mutex
	mails []*Mail // newest first
	seq   int
}

// Mail is one mail in the outbox.
type Mail struct {
	// Seq numbers the mails from 1, in the order they were sent: the page's /dev/mail/<Seq>.
	Seq int
	mail.Prepared
	// Raw is the message as the relay would have received it.
	Raw []byte
	// Links are the message's http(s) links, each once: the HTML part's, then the text part's.
	Links []string
}

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

// New returns an empty outbox.
func New(o Options) *Outbox {
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
	if o.Defaults.From == "" {
		o.Defaults.From = DefaultFrom
	}
	css := template.CSS(pageCSS)
	t := template.Must(template.New("page").Funcs(template.FuncMap{
		"css":  func() template.CSS { return css },
		"join": strings.Join,
	}).Parse(pageHTML))
	h := sha256.Sum256([]byte(pageCSS))
	return &Outbox{o: o, tmpl: t, style: "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"}
}

// Send keeps m, newest first, and logs it.
func (b *Outbox) Send(_ context.Context, m mail.Message) error {
	p, err := b.o.Defaults.Prepare(m)
	if err != nil {
		return err
	}
	raw, err := p.Bytes()
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.seq++
	dm := &Mail{Seq: b.seq, Prepared: *p, Raw: raw, Links: links(p.HTML, p.Text)}
	b.mails = slices.Insert(b.mails, 0, dm)
	if len(b.mails) > b.o.Max {
		b.mails = b.mails[:b.o.Max]
	}
	b.mu.Unlock()
	if b.o.Logger != nil {
		args := []any{"to", p.Recipients, "subject", p.Subject, "links", dm.Links}
		if p.Unsubscribe != "" {
			args = append(args, "unsubscribe", p.Unsubscribe) // one-click: a POST, which the page's form sends
		}
		args = append(args, "view", strings.TrimSuffix(b.o.BaseURL, "/")+"/dev/mail/"+strconv.Itoa(dm.Seq))
		b.o.Logger.Info("mail kept in the dev outbox", args...)
	}
	return nil
}

// List returns the mails, newest first.
func (b *Outbox) List() []Mail {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Mail, len(b.mails))
	for i, m := range b.mails {
		out[i] = *m
	}
	return out
}

// Get returns the mail numbered seq, if it is still kept.
func (b *Outbox) Get(seq int) (Mail, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.mails {
		if m.Seq == seq {
			return *m, true
		}
	}
	return Mail{}, false
}

var urlRE = regexp.MustCompile(`https?://[^\s<>"')\]]+`)

// links lists the http(s) links of a mail: the HTML part's hrefs, then the URLs in the text part.
func links(htmlPart, text string) []string {
	var out []string
	add := func(u string) {
		if (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	z := html.NewTokenizer(strings.NewReader(htmlPart))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		if name, hasAttr := z.TagName(); string(name) == "a" && hasAttr {
			for {
				k, v, more := z.TagAttr()
				if string(k) == "href" {
					add(strings.TrimSpace(string(v)))
				}
				if !more {
					break
				}
			}
		}
	}
	for _, u := range urlRE.FindAllString(text, -1) {
		add(strings.TrimRight(u, ".,;:!?"))
	}
	return out
}

// textPart is a run of the text part: plain text, or a URL the page makes a link.
type textPart struct {
	S   string
	URL bool
}

func splitLinks(text string) []textPart {
	var out []textPart
	last := 0
	for _, loc := range urlRE.FindAllStringIndex(text, -1) {
		end := loc[0] + len(strings.TrimRight(text[loc[0]:loc[1]], ".,;:!?"))
		if loc[0] > last {
			out = append(out, textPart{S: text[last:loc[0]]})
		}
		out = append(out, textPart{S: text[loc[0]:end], URL: true})
		last = end
	}
	if last < len(text) {
		out = append(out, textPart{S: text[last:]})
	}
	return out
}

// Name implements server.Service.
func (b *Outbox) Name() string { return "devmail" }

// Ready implements server.Service: the outbox is in memory.
func (b *Outbox) Ready(context.Context) error { return nil }
