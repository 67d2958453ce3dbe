package signin

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/formsservice/formsservice/services/auth/realm"
)

// withIssuer makes the authorization response fosite writes, a success or an error, carry the issuer
// as iss (RFC 9207): a client that talks to several providers checks it to tell which one answered,
// the defence against mix-up attacks that RFC 9700 (4.4) recommends. Discovery says so
// (authorization_response_iss_parameter_supported).
func withIssuer(w http.ResponseWriter, rt *realm.Realm) http.ResponseWriter {
	return issuerInRedirect{ResponseWriter: w, iss: rt.Issuer}
}

type issuerInRedirect struct {
	http.ResponseWriter
	iss string
}

// WriteHeader appends iss to the redirect's query as it is written: the client's own query parameters
// keep their order and encoding. Only the query response mode exists here (discovery), so there is no
// fragment to carry it instead.
func (w issuerInRedirect) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); loc != "" && (code == http.StatusSeeOther || code == http.StatusFound) {
		sep := "?"
		if strings.Contains(loc, "?") {
			sep = "&"
		}
		w.Header().Set("Location", loc+sep+"iss="+url.QueryEscape(w.iss))
	}
	w.ResponseWriter.WriteHeader(code)
}
