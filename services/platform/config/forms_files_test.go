package config

import (
	"strings"
	"testing"
)

// forms.files and the file fields: what is taken, and each refusal with what it says.
func TestFormFiles_Validate(t *testing.T) {
	const files = "  files: {bucket: form-uploads, linkKeyFile: /run/secrets/link}\n"
	load := func(doc string) (*Config, error) {
		c, err := Parse([]byte("allowedOrigins: [https://www.example.com]\n" + doc))
		if err == nil {
			c.ApplyDefaults()
			err = c.Validate()
		}
		return c, err
	}
	c, err := load("forms:\n" + files + "  declared: [{id: apply, maxFileBytes: 1048576, fields: [{name: cv, type: file, maxSize: 1000, maxFiles: 2, accept: [application/pdf, image/*]}]}]\n")
	if err != nil {
		t.Fatal(err)
	}
	f, cv := c.Forms.Files, c.Forms.Declared[0].Fields[0]
	if f.FilesPrefix() != "forms/" || f.TTL() != DefaultLinkTTL || c.Forms.Declared[0].FileBytes() != 1<<20 || cv.FileSize() != 1000 || cv.FileCount() != 2 ||
		!cv.Accepts("image/png") || !cv.Accepts("application/pdf") || cv.Accepts("text/plain") || cv.Accepts("imagex/png") {
		t.Errorf("files %+v, cv %+v", f, cv)
	}
	if d := (FormField{Type: FieldFile}); d.FileSize() != DefaultFileSize || d.FileCount() != 1 || !d.Accepts("anything/at-all") {
		t.Errorf("defaults %+v", d)
	}
	field := func(fd string) string { return "forms:\n" + files + "  declared: [{id: x, fields: [" + fd + "]}]\n" }
	for doc, want := range map[string]string{
		"forms: {declared: [{id: x, fields: [{name: cv, type: file}]}]}":                                  "a file field needs forms.files",
		"forms: {files: {bucket: B, linkKeyFile: k}}":                                                     "forms.files.bucket",
		"forms: {files: {bucket: ok-bucket}}":                                                             "forms.files.linkKeyFile",
		"forms: {files: {bucket: ok-bucket, linkKeyFile: k, prefix: nofolder}}":                           "forms.files.prefix",
		"forms: {files: {bucket: ok-bucket, linkKeyFile: k, linkTTL: -1h}}":                               "linkTTL",
		field("{name: cv, type: file, maxSize: 104857601}"):                                               "maxSize: 1 to",
		field("{name: cv, type: file, maxFiles: 21}"):                                                     "maxFiles: 1 to 20",
		field("{name: cv, type: file, accept: [pdf]}"):                                                    "accept[0]",
		field("{name: cv, type: file, accept: ['*/*']}"):                                                  "accept[0]",
		field("{name: cv, type: file, accept: [Image/PNG]}"):                                              "accept[0]",
		field("{name: cv, type: file, accept: ['text/plain; charset=utf-8']}"):                            "accept[0]",
		field("{name: a, type: text, maxSize: 10}"):                                                       "for file fields",
		"forms:\n" + files + "  declared: [{id: x, maxFileBytes: 10, fields: [{name: a, type: text}]}]\n": "the form has no file field",
	} {
		if _, err := load(doc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", doc, err, want)
		}
	}
}
