package config

import (
	"fmt"
	"mime"
	"regexp"
	"slices"
	"strings"
	"time"
)

// FormFiles is where the declared forms' file fields keep their bytes: an S3-compatible bucket, reached
// as the backups reach theirs (the AWS_* environment: AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION; package objectstore). Redis keeps only what the submission says
// of each file (key, name, size, type, SHA-256). docs/forms.md "Files", D77.
type FormFiles struct {
	// Bucket holds the files; it must exist.
	Bucket string `json:"bucket"`
	// Prefix starts every key (default "forms/"); a file's key is PREFIX<form id>/<random id>.
	Prefix string `json:"prefix,omitempty"`
	// LinkKeyFile holds the key (at least 32 bytes) that signs the download links in mails and webhooks.
	LinkKeyFile string `json:"linkKeyFile"`
	// LinkTTL is how long a download link works after its mail or webhook was made; default 7 days.
	LinkTTL Duration `json:"linkTTL,omitempty"`
}

// Limits of file fields.
const (
	DefaultFileSize      = 10 << 20  // a file field's maxSize
	MaxFileSize          = 100 << 20 // the largest maxSize and maxFileBytes
	DefaultFormFileBytes = 20 << 20  // a form's maxFileBytes
	MaxFilesPerField     = 20
	DefaultLinkTTL       = 7 * 24 * time.Hour
	DefaultFilesPrefix   = "forms/"
	// MinLinkKey is the shortest key (linkKeyFile, trimmed) that may sign download links: 256 bits.
	MinLinkKey = 32
)

var (
	bucketPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	prefixPattern = regexp.MustCompile(`^([A-Za-z0-9_.-]+/)*$`)
)

// FilesPrefix is the prefix of every file's key.
func (f *FormFiles) FilesPrefix() string {
	if f.Prefix == "" {
		return DefaultFilesPrefix
	}
	return f.Prefix
}

// TTL is how long a download link works.
func (f *FormFiles) TTL() time.Duration {
	if f.LinkTTL == 0 {
		return DefaultLinkTTL
	}
	return f.LinkTTL.D()
}

// HasFiles reports whether the form has a file field.
func (f DeclaredForm) HasFiles() bool {
	return slices.ContainsFunc(f.Fields, func(fd FormField) bool { return fd.Type == FieldFile })
}

// FileBytes is the most bytes of files one submission of the form carries.
func (f DeclaredForm) FileBytes() int64 {
	if f.MaxFileBytes == 0 {
		return DefaultFormFileBytes
	}
	return f.MaxFileBytes
}

// FileSize is the largest file a file field takes.
func (fd FormField) FileSize() int64 {
	if fd.MaxSize == 0 {
		return DefaultFileSize
	}
	return fd.MaxSize
}

// FileCount is how many files a file field takes.
func (fd FormField) FileCount() int {
	if fd.MaxFiles == 0 {
		return 1
	}
	return fd.MaxFiles
}

// Accepts reports whether a file field takes a file of the sniffed media type mt ("image/png"): an
// accept entry names it, or its family ("image/*"); an empty accept takes anything.
func (fd FormField) Accepts(mt string) bool {
	if len(fd.Accept) == 0 {
		return true
	}
	family, _, _ := strings.Cut(mt, "/")
	for _, a := range fd.Accept {
		if strings.EqualFold(a, mt) || strings.HasSuffix(a, "/*") && strings.EqualFold(strings.TrimSuffix(a, "/*"), family) {
			return true
		}
	}
	return false
}

func (fd FormField) validateFile(at string) []error {
	if fd.Type != FieldFile {
		if fd.MaxSize != 0 || fd.MaxFiles != 0 || len(fd.Accept) > 0 {
			return []error{fmt.Errorf("%s: maxSize, maxFiles and accept are for file fields", at)}
		}
		return nil
	}
	var errs []error
	if fd.MaxSize < 0 || fd.MaxSize > MaxFileSize {
		errs = append(errs, fmt.Errorf("%s.maxSize: 1 to %d bytes", at, MaxFileSize))
	}
	if fd.MaxFiles < 0 || fd.MaxFiles > MaxFilesPerField {
		errs = append(errs, fmt.Errorf("%s.maxFiles: 1 to %d", at, MaxFilesPerField))
	}
	for i, a := range fd.Accept {
		mt, params, err := mime.ParseMediaType(a)
		if err != nil || mt != a || len(params) > 0 || !strings.Contains(mt, "/") || strings.HasPrefix(mt, "*") {
			errs = append(errs, fmt.Errorf("%s.accept[%d] %q: want a media type in lower case like application/pdf, or a family like image/*", at, i, a))
		}
	}
	return errs
}

func (f DeclaredForm) validateFileBytes(at string) []error {
	if f.MaxFileBytes < 0 || f.MaxFileBytes > MaxFileSize {
		return []error{fmt.Errorf("%s.maxFileBytes: 1 to %d bytes", at, MaxFileSize)}
	}
	if f.MaxFileBytes != 0 && !f.HasFiles() {
		return []error{fmt.Errorf("%s.maxFileBytes: the form has no file field", at)}
	}
	return nil
}

func (f Forms) validateFiles() []error {
	var errs []error
	if fs := f.Files; fs != nil {
		if !bucketPattern.MatchString(fs.Bucket) {
			errs = append(errs, fmt.Errorf("forms.files.bucket %q: want an S3 bucket name (3 to 63 of a-z, 0-9, . and -)", fs.Bucket))
		}
		if !prefixPattern.MatchString(fs.Prefix) {
			errs = append(errs, fmt.Errorf("forms.files.prefix %q: want folders ending in / (letters, digits, _ . -)", fs.Prefix))
		}
		if fs.LinkKeyFile == "" {
			errs = append(errs, fmt.Errorf("forms.files.linkKeyFile: name the file of the key that signs download links"))
		}
		if fs.LinkTTL < 0 {
			errs = append(errs, fmt.Errorf("forms.files.linkTTL: must not be negative"))
		}
	}
	for _, d := range f.Declared {
		if d.HasFiles() && f.Files == nil {
			errs = append(errs, fmt.Errorf("forms.declared[%s]: a file field needs forms.files (the bucket its bytes go to)", d.ID))
		}
	}
	return errs
}
