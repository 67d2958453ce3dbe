package page

import (
	_ "embed"
	"net/http"
)

//go:embed secondstep.html
var secondStepHTML string

// SecondStep is the data of a sign-in's second step: the code from an authenticator app, or a recovery
// code, after the password was right.
type SecondStep struct {
	Action     string // /oauth2/authorize with the authorization request's query, as on the sign-in page
	CSRF       string
	ClientName string
	Email      string // the account signing in (the person typed it)
	Error      string
	Look       Look // set by the renderer
}

// RenderSecondStep writes the second step of a sign-in.
func (r *Renderer) RenderSecondStep(w http.ResponseWriter, status int, d SecondStep, formActions []string) {
	d.Look = LookOf(w)
	if d.ClientName == "" {
		d.ClientName = translate(d.Look.Lang, "the application")
	}
	r.render(w, status, "secondstep", d, formActions)
}
