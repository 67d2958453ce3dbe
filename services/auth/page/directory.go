package page

import (
	_ "embed"
	"net/http"
)

//go:embed directory.html
var directoryHTML string

// DirectorySignIn is the data of the page of a connector of type ldap (D75): the username and password
// of the person's account in the directory, posted to the authorization request with action=ldap.
type DirectorySignIn struct {
	Action     string // the form's target: /oauth2/authorize with the authorization request's query
	CSRF       string
	ClientName string
	Name       string // the connector's name ("Sign in with Name")
	Prompt     string // the username field's label (the connector's usernamePrompt)
	Username   string
	Error      string
	BackURL    string // the sign-in page with every way of signing in (host-relative)
	Look       Look   // set by the renderer
}

// RenderDirectorySignIn writes the page of a connector of type ldap.
func (r *Renderer) RenderDirectorySignIn(w http.ResponseWriter, status int, d DirectorySignIn, formActions []string) {
	d.Look = LookOf(w)
	if d.ClientName == "" {
		d.ClientName = translate(d.Look.Lang, "the application")
	}
	r.render(w, status, "signin-directory", d, formActions)
}

// DirectoryLink is the data of the account page's step that links the person's account in the
// directory of an ldap connector: its username and password, posted to /account/connectors/ldap.
type DirectoryLink struct {
	Frame
	Connector string // the connector's ID
	Name      string // the connector's name ("Link Name")
	Prompt    string // the username field's label (the connector's usernamePrompt)
	Username  string
	Error     string
}

// RenderDirectoryLink writes the step that links an account in a directory.
func (r *AccountRenderer) RenderDirectoryLink(w http.ResponseWriter, status int, d DirectoryLink) {
	d.Title = "Link " + d.Name
	r.render(w, status, "directorylink", &d.Frame, &d)
}
