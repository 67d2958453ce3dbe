package manage

import (
	"context"
	"errors"
	"path"

	"github.com/formsservice/formsservice/services/forms/store"
)

// ErrNoSuchFile: the submission has no file of that id.
var ErrNoSuchFile = errors.New("the submission has no such file")

// GrantFile lets one download of the file fileID (the last part of its object key) of the submission id
// of form through the forms service's link route, for store.FileGrantTTL (D83), and records it
// (form.file_link_made, detail form, id, file). It returns the file and the grant's token.
// ErrNoSuchFile when the submission names no such file; the submission's errors as Submission's.
func (op Operator) GrantFile(ctx context.Context, form, id, fileID string) (store.File, string, error) {
	s, err := op.o.Submission(ctx, form, id)
	if err != nil {
		return store.File{}, "", err
	}
	for _, f := range s.Files {
		if path.Base(f.Key) != fileID || path.Base(path.Dir(f.Key)) != form {
			continue
		}
		token, err := store.GrantFile(ctx, op.o.rdb, f.Key, store.FileGrantTTL)
		if err != nil {
			return store.File{}, "", failed(err)
		}
		op.record(ctx, FileLinkMade, map[string]string{"form": form, "id": id, "file": fileID})
		return f, token, nil
	}
	return store.File{}, "", ErrNoSuchFile
}
