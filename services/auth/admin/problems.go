package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// Every refusal of the API is an RFC 9457 problem (application/problem+json, type about:blank, the
// status's title), as package bearer answers a refused token; a refusal of the request's input names
// the faulty fields in the extension member errors (field -> what is wrong).

// MaxBody is the largest request body the API reads (its bodies are an address, a name, a password and
// at most 32 group names).
const MaxBody = 16 << 10

func problem(w http.ResponseWriter, status int, detail string, fields map[string]string) {
	bearer.WriteProblem(w, bearer.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Errors: fields})
}

// badRequest answers 400 naming the field and what is wrong with it.
func badRequest(w http.ResponseWriter, field, what string) {
	problem(w, http.StatusBadRequest, field+": "+what, map[string]string{field: what})
}

// RefuseBody is the API's answer to a body the server refused before routing (413 over the limit, 400
// unreadable): routes.go gives it to the admin routes (server.Route.Refuse).
func RefuseBody(c *fiber.Ctx, status int) error {
	detail := "The request body could not be read."
	if status == http.StatusRequestEntityTooLarge {
		detail = fmt.Sprintf("The request body is larger than the API reads (%d bytes).", MaxBody)
	}
	c.Set("Content-Type", "application/problem+json")
	c.Set("Cache-Control", "no-store")
	b, _ := json.Marshal(bearer.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail})
	return c.Status(status).Send(append(b, '\n'))
}

// fail answers an error of an operation: what the caller can act on with its status (404, 409, 400),
// a store that did not answer with 503, anything else with 500 (logged, never sent).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var weak *accounts.WeakPasswordError
	switch {
	case errors.Is(err, users.ErrNotFound):
		problem(w, http.StatusNotFound, "No such user.", nil)
	case errors.Is(err, users.ErrEmailTaken):
		problem(w, http.StatusConflict, "An account with this e-mail address exists already.", nil)
	case errors.Is(err, users.ErrInvalidEmail):
		badRequest(w, "email", "not a valid e-mail address")
	case errors.As(err, &weak):
		problem(w, http.StatusBadRequest, "password: "+weak.Reason.Message(), map[string]string{"password": string(weak.Reason)})
	case errors.Is(err, users.ErrInvalidGroup), errors.Is(err, users.ErrTooManyGroups):
		badRequest(w, "groups", err.Error())
	case errors.Is(err, accounts.ErrAlreadyVerified):
		problem(w, http.StatusConflict, "The address is verified already; nothing was sent.", nil)
	case errors.Is(err, users.ErrDisabled):
		problem(w, http.StatusConflict, "The account is disabled (enable it first); nothing was sent.", nil)
	case errors.Is(err, mail.ErrNoRelay):
		problem(w, http.StatusConflict, "No mail relay is configured (mail.smtp); nothing was sent.", nil)
	case web.IsUnavailable(err):
		w.Header().Set("Retry-After", "5")
		problem(w, http.StatusServiceUnavailable, "The service is briefly unavailable; try again.", nil)
	default:
		h.o.Log.Error("admin API: the request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		problem(w, http.StatusInternalServerError, "The request failed; the service's log says why.", nil)
	}
}

// decode reads the request's JSON body into v: application/json only (415 otherwise), at most MaxBody
// bytes, one object with no field v does not have. optional accepts an empty body (v unchanged). It
// answers (and returns false) when the body is refused.
func decode(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		problem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The request body is larger than the API reads (%d bytes).", MaxBody), nil)
		return false
	case err != nil:
		badRequest(w, "body", "unreadable")
		return false
	case len(body) == 0 && optional:
		return true
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		problem(w, http.StatusUnsupportedMediaType, "The request body must be application/json.", nil)
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		badRequest(w, jsonField(err), jsonProblem(err))
		return false
	}
	if dec.More() {
		badRequest(w, "body", "one JSON object, nothing after it")
		return false
	}
	return true
}

// jsonField names the field a decoding error is about ("body" when it is about the whole).
func jsonField(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return typeErr.Field
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return strings.Trim(name, `"`)
	}
	return "body"
}

// jsonProblem says what is wrong, without echoing the input.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		return "must be " + jsonType(typeErr.Type.Kind().String())
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "not a whole JSON object"
	}
	return "not a JSON object of this request"
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "of another type"
}
