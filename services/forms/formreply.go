package forms

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/page"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A plain HTML form post (docs/forms.md, "Plain HTML forms") gets the same checks, in the same order,
// and the same status codes as a JSON body; only the answer is for a person instead of a script: a 303
// to the thank-you address once the submission is taken, and otherwise a page (or, when the site
// configures errorURL, a 303 there carrying the field errors).

// formPostKey keeps a form post's answering context on its request (fasthttp's user values): set only
// for form posts, so a JSON request pays nothing.
const formPostKey = "forms.post"

// formPost is what answering a form post needs besides the result.
type formPost struct {
	origin string
	site   *site
	next   string // the thank-you address of a valid _next field, absolute
	// declared is the declared form posted to, whose labels the error page shows; nil for the built-in forms.
	declared *config.DeclaredForm
}

// formPostOf returns the request's form-post context, or nil when the request is not a form post.
// Before the handler has read the body, it is built from the headers alone.
func (s *Service) formPostOf(c *fiber.Ctx) *formPost {
	if p, ok := c.Context().UserValue(formPostKey).(*formPost); ok {
		return p
	}
	if !isFormContentType(c.Request().Header.ContentType()) {
		return nil
	}
	origin := string(c.Request().Header.Peek(fiber.HeaderOrigin))
	lc := s.live()
	if !lc.origins.allowed([]byte(origin)) {
		return &formPost{} // nothing about a foreign origin goes into the answer
	}
	return &formPost{origin: origin, site: lc.sites.find(origin)}
}

// replyForm answers a form post with a redirect or a page for result r (status is what the JSON answer
// would have had); errs are the field errors of a 400.
func (s *Service) replyForm(c *fiber.Ctx, ep endpoint, p *formPost, r result, status int, errs Errors) {
	switch r {
	case resultCreated, resultDuplicate, resultReplayed, resultHoneypot:
		if to := p.thanksURL(); to != "" {
			c.Response().Header.Set(fiber.HeaderLocation, to)
			c.Status(fiber.StatusSeeOther)
			return
		}
	}
	if errs != nil {
		if u := p.errorURL(); u != "" {
			if to := errorRedirect(resolveOnOrigin(p.origin, u), errs); to != "" {
				c.Response().Header.Set(fiber.HeaderLocation, to)
				c.Status(fiber.StatusSeeOther)
				return
			}
		}
	}
	back := p.back(c)
	siteName := ""
	if p.site != nil {
		siteName = p.site.Name
	}
	var body []byte
	if errs != nil {
		body = page.RenderErrors(page.Errors{Site: siteName, Title: "Please check the form",
			Text: []string{"The form was not sent, because of what follows."}, Errors: errorLines(ep, p.declared, errs, back), Back: back})
	} else {
		title, text := formMessage(ep, r, c)
		body = page.RenderMessage(page.Message{Site: siteName, Title: title, Text: text, Back: back})
	}
	for _, h := range page.Headers() {
		c.Response().Header.Set(h[0], h[1])
	}
	c.Status(status)
	c.Response().SetBodyRaw(body)
}

// thanksURL is where a taken form post goes: its _next, else its site's thanksURL, else nowhere (the
// forms' own page).
func (p *formPost) thanksURL() string {
	if p.next != "" {
		return p.next
	}
	if p.origin == "" {
		return ""
	}
	if p.declared != nil && p.declared.ThanksURL != "" {
		return resolveOnOrigin(p.origin, p.declared.ThanksURL)
	}
	if p.site != nil && p.site.ThanksURL != "" {
		return resolveOnOrigin(p.origin, p.site.ThanksURL)
	}
	return ""
}

// errorURL is where a form post with field errors goes: its declared form's errorURL, else its site's,
// else nowhere (the forms' own error page).
func (p *formPost) errorURL() string {
	switch {
	case p.origin == "":
		return ""
	case p.declared != nil && p.declared.ErrorURL != "":
		return p.declared.ErrorURL
	case p.site != nil:
		return p.site.ErrorURL
	}
	return ""
}

// back is the page a person returns to: the form's page when the browser said which (a Referer on the
// posting origin; browsers send only the origin cross-site unless the page's Referrer-Policy allows
// more), else the origin itself.
func (p *formPost) back(c *fiber.Ctx) string {
	if p.origin == "" {
		return ""
	}
	ref := string(c.Request().Header.Referer())
	if u, ok := onOrigin(p.origin, ref); ok {
		u.Fragment = ""
		return u.String()
	}
	return p.origin + "/"
}

// resolveOnOrigin makes a configured address absolute: a path is on the posting origin.
func resolveOnOrigin(origin, ref string) string {
	if strings.HasPrefix(ref, "/") {
		return origin + ref
	}
	return ref
}

// nextURL checks a form post's _next: a path ("/thanks", not "//host"), or an absolute URL on the
// posting origin itself. Anything else would make the forms an open redirect for the site's visitors.
func nextURL(origin, next string) (string, bool) {
	if strings.HasPrefix(next, "/") && !strings.HasPrefix(next, "//") && !strings.HasPrefix(next, "/\\") {
		u, err := url.Parse(next)
		if err != nil || u.Scheme != "" || u.Host != "" {
			return "", false
		}
		return origin + u.String(), true
	}
	u, ok := onOrigin(origin, next)
	if !ok {
		return "", false
	}
	return u.String(), true
}

// onOrigin parses raw and reports whether it is an http(s) URL on origin (scheme, host and port),
// without user information.
func onOrigin(origin, raw string) (*url.URL, bool) {
	if raw == "" || origin == "" {
		return nil, false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Opaque != "" {
		return nil, false
	}
	host := u.Host
	if (u.Scheme == "https" && strings.HasSuffix(host, ":443")) || (u.Scheme == "http" && strings.HasSuffix(host, ":80")) {
		host = host[:strings.LastIndexByte(host, ':')]
	}
	if u.Scheme+"://"+strings.ToLower(host) != origin {
		return nil, false
	}
	return u, true
}

// errorRedirect adds the field errors to the site's error address as error_<field>=<code>.
func errorRedirect(to string, errs Errors) string {
	u, err := url.Parse(to)
	if err != nil {
		return ""
	}
	q := u.Query()
	for _, f := range slices.Sorted(maps.Keys(errs)) {
		q.Set("error_"+f, errs[f])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// fieldOrder is the order of the error page's lines: the forms' fields as documented, then the rest.
var fieldOrder = []string{BodyField, "name", "email", "organization", "association", "role", "size", "topic", "message", "consent", NextField, IdempotencyKeyField}

// errorLines are the error page's lines: each field's label, what is wrong in words, and a link to the
// field on the form's page (#<field>: give the inputs ids equal to their names).
func errorLines(ep endpoint, form *config.DeclaredForm, errs Errors, back string) []page.FieldError {
	order := fieldOrder
	if form != nil {
		order = []string{BodyField}
		for _, fd := range form.Fields {
			order = append(order, fd.Name)
		}
	}
	keys := slices.Collect(maps.Keys(errs))
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	lines := make([]page.FieldError, 0, len(keys))
	for _, f := range keys {
		l := page.FieldError{Label: fieldLabel(f), Message: codeMessage(ep, f, errs[f])}
		if form != nil {
			l = declaredErrorLine(form, f, errs[f])
		}
		if back != "" && f != BodyField && f != NextField && f != IdempotencyKeyField {
			l.Href = back + "#" + url.PathEscape(f)
		}
		lines = append(lines, l)
	}
	return lines
}

func fieldLabel(f string) string {
	switch f {
	case BodyField:
		return "The form"
	case "email":
		return "E-mail address"
	case NextField:
		return "The thank-you address (_next)"
	case IdempotencyKeyField:
		return "The form's submission key (_idempotency_key)"
	case "name", "organization", "association", "role", "size", "topic", "message", "consent":
		return strings.ToUpper(f[:1]) + f[1:]
	}
	return "Verification" // a bot check's token field
}

// limits are the documented bounds, for the messages.
var limits = map[string][2]int{
	"name": {0, MaxName}, "organization": {0, MaxOrganization}, "association": {0, MaxAssociation},
	"message": {MinMessage, MaxMessage}, "email": {0, MaxEmail},
}

func codeMessage(ep endpoint, f, code string) string {
	switch {
	case f == BodyField:
		return "it could not be read. It may have sent a file (only text fields are taken) or a field twice."
	case f == NextField:
		return "it must be a page of the site that holds the form."
	case f == IdempotencyKeyField:
		return "it must be up to 255 visible ASCII characters, such as a UUID."
	case fieldLabel(f) == "Verification" && code == CodeRequired:
		return "please complete the check that you are a person."
	case fieldLabel(f) == "Verification":
		return "the check did not pass or has expired; please complete it again."
	}
	switch code {
	case CodeRequired:
		if f == "consent" {
			return "please tick the box to agree."
		}
		return "please fill this in."
	case CodeTooLong:
		return fmt.Sprintf("at most %d characters.", limits[f][1])
	case CodeTooShort:
		return fmt.Sprintf("at least %d characters.", limits[f][0])
	case CodeInvalidEmail:
		return "this is not an e-mail address (like name@example.com)."
	case CodeInvalidChoice:
		return "please pick one of the choices."
	case CodeMustBeTrue:
		return "please tick the box to agree."
	}
	// invalid_type: a control or invisible formatting character, or a value of the wrong kind.
	return "it holds characters or a value that cannot be taken."
}

// formMessage is the title and text of the page answering result r.
func formMessage(ep endpoint, r result, c *fiber.Ctx) (string, []string) {
	switch r {
	case resultCreated, resultReplayed, resultHoneypot:
		if ep == waitlistEndpoint {
			return "Thank you", []string{"You are on the waitlist."}
		}
		return "Thank you", []string{"Your message has been sent."}
	case resultDuplicate:
		if ep == declaredEndpoint {
			return "Already received", []string{"This form was sent with these details before; there is nothing more to do."}
		}
		return "You are already on the list", []string{"This address is on the waitlist already; there is nothing more to do."}
	case resultForbidden:
		return "This form cannot be sent from here", []string{"The page that holds this form is not allowed to send it. If it is your site, add its origin to the forms' allowed origins."}
	case resultTooLarge:
		if form, ok := c.Context().UserValue(declaredFormKey).(*config.DeclaredForm); ok && form.HasFiles() {
			return "Too much to send", []string{"The files are more than the form takes (" + humanBytes(form.FileBytes()) +
				" in all), or the text more than 16 KB. Please go back, send smaller files and send it again."}
		}
		return "Too much to send", []string{"What the form holds is more than 16 KB. Please go back, shorten it and send it again."}
	case resultUnsupported:
		return "This form cannot be read", []string{"It sends its data in a way the service does not take (a character set other than UTF-8, or compressed)."}
	case resultRateLimited:
		return "Please wait a moment", []string{"Too many forms were sent from your network in the last minute. Please go back and send it again in " +
			string(c.Response().Header.Peek(fiber.HeaderRetryAfter)) + " seconds."}
	case resultUnknownForm:
		return "No such form", []string{"The page sends this form to an address where no form is declared."}
	case resultStoreError:
		return "Not sent", []string{"The form could not be saved just now. Please go back and send it again in a moment."}
	}
	return "Not sent", []string{"The form could not be sent. Please go back and send it again."}
}

// declaredErrorLine is an error page line of a declared form: the field's declared label and what is
// wrong in words, with the declared bounds.
func declaredErrorLine(form *config.DeclaredForm, f, code string) page.FieldError {
	fd := fieldOf(form, f)
	if fd == nil {
		if code == CodeUnknownField {
			return page.FieldError{Label: f, Message: "the form does not take this field."}
		}
		return page.FieldError{Label: fieldLabel(f), Message: codeMessage(declaredEndpoint, f, code)}
	}
	l := page.FieldError{Label: fd.DisplayLabel()}
	if fd.Type == config.FieldFile {
		l.Message = fileErrorMessage(fd, code)
		return l
	}
	switch code {
	case CodeTooLong:
		l.Message = fmt.Sprintf("at most %d characters.", fd.MaxLen())
	case CodeTooShort:
		l.Message = fmt.Sprintf("at least %d characters.", fd.MinLength)
	case CodeInvalidFormat:
		l.Message = map[config.FieldType]string{
			config.FieldURL:    "this is not a web address (like https://example.com).",
			config.FieldPhone:  "this is not a phone number (7 to 15 digits, like +44 20 7946 0018).",
			config.FieldNumber: "this is not a number.",
			config.FieldDate:   "this is not a date (like 2026-03-31).",
		}[fd.Type]
	case CodeOutOfRange:
		switch {
		case fd.Type == config.FieldManyOf:
			l.Message = fmt.Sprintf("please pick at most %d.", fd.MaxChoices)
		case fd.Min != "" && fd.Max != "":
			l.Message = fmt.Sprintf("it must be from %s to %s.", fd.Min, fd.Max)
		case fd.Min != "":
			l.Message = fmt.Sprintf("it must be at least %s.", fd.Min)
		default:
			l.Message = fmt.Sprintf("it must be at most %s.", fd.Max)
		}
	default:
		l.Message = codeMessage(declaredEndpoint, f, code)
	}
	return l
}

// fileErrorMessage says what is wrong with a file field's files, with its declared bounds.
func fileErrorMessage(fd *config.FormField, code string) string {
	switch code {
	case CodeRequired:
		return "please choose a file."
	case CodeFileTooLarge:
		return fmt.Sprintf("each file may be at most %s.", humanBytes(fd.FileSize()))
	case CodeOutOfRange:
		if fd.FileCount() == 1 {
			return "please choose one file."
		}
		return fmt.Sprintf("please choose at most %d files.", fd.FileCount())
	}
	if len(fd.Accept) > 0 {
		return "this kind of file is not taken; it takes " + strings.Join(fd.Accept, ", ") + "."
	}
	return "please choose a file to send."
}

// humanBytes writes a size as people read it: 1000 bytes, 500 KB, 10 MB (of 1024).
func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
