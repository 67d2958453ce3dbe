package delivery

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/forms/files"
	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// linker returns a stored file's signed download link and its expiry ("" when links cannot be made).
type linker func(f store.File) (string, time.Time)

// fileLinker signs links under forms.files at each delivery, so that a retried delivery carries a fresh
// link (D77). nil when forms.files is not set; a key that cannot be read leaves the links out (the
// notification still names the files; the log says why).
func fileLinker(cfg *config.Config, now func() time.Time, log *slog.Logger) linker {
	fc := cfg.Forms.Files
	if fc == nil {
		return nil
	}
	key, err := os.ReadFile(fc.LinkKeyFile)
	if err != nil {
		log.Warn("the files' download links cannot be signed: forms.files.linkKeyFile cannot be read")
		return nil
	}
	links, err := files.NewLinks([]byte(strings.TrimSpace(string(key))))
	if err != nil {
		log.Warn("the files' download links cannot be signed", "err", err)
		return nil
	}
	base, prefix := cfg.FormsURL(), fc.FilesPrefix()
	return func(f store.File) (string, time.Time) {
		form, id, ok := strings.Cut(strings.TrimPrefix(f.Key, prefix), "/")
		if !ok || !strings.HasPrefix(f.Key, prefix) || !files.ValidID(id) {
			return "", time.Time{}
		}
		exp := now().Add(fc.TTL()).Truncate(time.Second)
		return links.URL(base, form, id, exp), exp
	}
}

// fileFields are a submission's files as its notification shows them: one field per file field, in the
// form's order, each a list of files with their links.
func fileFields(fs []store.File, form *config.DeclaredForm, link linker) []notify.FormField {
	if len(fs) == 0 {
		return nil
	}
	var order []string
	if form != nil {
		for _, fd := range form.Fields {
			if fd.Type == config.FieldFile {
				order = append(order, fd.Name)
			}
		}
	}
	for _, f := range fs {
		if !slices.Contains(order, f.Field) {
			order = append(order, f.Field)
		}
	}
	var out []notify.FormField
	for _, name := range order {
		var list []notify.FileLink
		for _, f := range fs {
			if f.Field != name {
				continue
			}
			l := notify.FileLink{Name: f.Name, Size: f.Size, Type: f.Type, SHA256: f.SHA256}
			if link != nil {
				l.URL, l.Expires = link(f)
			}
			list = append(list, l)
		}
		if list == nil {
			continue
		}
		label := name
		if form != nil {
			for _, fd := range form.Fields {
				if fd.Name == name {
					label = fd.DisplayLabel()
				}
			}
		}
		out = append(out, notify.FormField{Name: name, Label: label, Value: list})
	}
	return out
}
