package admin

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
)

// FileLink is a one-time download link of a submission's file (D83): the forms service's link route
// with a grant the API put in the store, good for one download within store.FileGrantTTL. The auth
// service never holds the key that signs the links in mails.
type FileLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
	Name      string    `json:"name"`
	Size      int64     `json:"size"`
	Type      string    `json:"type"`
}

// fileLink is POST /admin/v1/forms/{form}/submissions/{id}/files/{file}/link (forms:read, as reading
// the submission is): a fresh one-time link to the file, audited as form.file_link_made.
func (h *Handler) fileLink(w http.ResponseWriter, r *http.Request, p bearer.Principal) {
	id, ok := submissionID(w, r, 3)
	if !ok || !decode(w, r, &struct{}{}, true) {
		return
	}
	form, fileID := formOf(r), segment(r, 5)
	f, token, err := h.formsOperator(p).GrantFile(r.Context(), form, id, fileID)
	if errors.Is(err, manage.ErrNoSuchFile) {
		problem(w, http.StatusNotFound, "The submission has no such file.", nil)
		return
	} else if err != nil {
		h.formsFail(w, r, err)
		return
	}
	// The forms service's link route (services/forms DownloadPath; the provider links only the forms'
	// store and manage, D63): TestAdminAPI_FileLink_DownloadsTheFileOnceFromTheFormsService holds them
	// together.
	base := h.o.Realm.Current().Config.FormsURL()
	writeJSON(w, http.StatusOK, FileLink{URL: base + "/f/" + url.PathEscape(form) + "/files/" + url.PathEscape(fileID) + "?" + url.Values{"grant": {token}}.Encode(),
		ExpiresAt: time.Now().Add(store.FileGrantTTL).UTC().Truncate(time.Second), Name: f.Name, Size: f.Size, Type: f.Type})
}
