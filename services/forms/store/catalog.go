package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/email"
)

// The catalogue (docs/architecture.md D63): the declared forms as the forms service serves them, which
// the forms service writes into the store at its start and after each reload of its configuration, so
// that the admin API, served by the auth service on the same store with a configuration that has no
// forms section, knows each form's title and fields. The store is where the forms' data is; what the
// forms are is kept beside it.
//
//	fs:{forms}:declared   string: the catalogue as JSON (Catalog)
const formsCatalog = "fs:{forms}:declared"

// Catalog is the declared forms of the forms service's configuration when it was published.
type Catalog struct {
	PublishedAt time.Time     `json:"published_at"`
	Forms       []CatalogForm `json:"forms"`
}

// CatalogForm is what the admin API shows of a declared form: never a secret, a recipient or a URL of
// its notifications, only whether it has any.
type CatalogForm struct {
	ID     string         `json:"id"`
	Title  string         `json:"title,omitempty"`
	Fields []CatalogField `json:"fields"`
	Unique string         `json:"unique,omitempty"`
	// Notifies: the form delivers its submissions (mail or webhooks) or answers their senders.
	Notifies bool `json:"notifies"`
	// Retention is how long its submissions are kept ("" for ever), as the configuration writes it.
	Retention string `json:"retention,omitempty"`
}

// CatalogField is one field of a declared form.
type CatalogField struct {
	Name     string   `json:"name"`
	Label    string   `json:"label,omitempty"`
	Type     string   `json:"type"`
	Required bool     `json:"required,omitempty"`
	Choices  []string `json:"choices,omitempty"`
}

// CatalogOf is the catalogue of cfg's declared forms.
func CatalogOf(declared []config.DeclaredForm, now time.Time) Catalog {
	c := Catalog{PublishedAt: now.UTC(), Forms: make([]CatalogForm, 0, len(declared))}
	for _, d := range declared {
		f := CatalogForm{ID: d.ID, Title: d.Title, Unique: d.Unique, Notifies: d.Notify != nil || d.Autoresponder != nil,
			Fields: make([]CatalogField, 0, len(d.Fields))}
		if d.Retention > 0 {
			f.Retention = time.Duration(d.Retention).String()
		}
		for _, fd := range d.Fields {
			f.Fields = append(f.Fields, CatalogField{Name: fd.Name, Label: fd.Label, Type: string(fd.Type),
				Required: fd.Required || fd.Type == config.FieldConsent, Choices: fd.Choices})
		}
		c.Forms = append(c.Forms, f)
	}
	return c
}

// PublishCatalog writes the catalogue of declared (the forms service's configuration in force).
func PublishCatalog(ctx context.Context, rdb redis.UniversalClient, declared []config.DeclaredForm, now time.Time) error {
	b, err := json.Marshal(CatalogOf(declared, now))
	if err != nil {
		return err
	}
	return rdb.Set(ctx, formsCatalog, b, 0).Err()
}

// ReadCatalog returns the catalogue last published; ok is false when no forms service published one.
func ReadCatalog(ctx context.Context, rdb redis.UniversalClient) (c Catalog, ok bool, err error) {
	raw, err := rdb.Get(ctx, formsCatalog).Bytes()
	if errors.Is(err, redis.Nil) {
		return Catalog{}, false, nil
	}
	if err != nil {
		return Catalog{}, false, err
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return Catalog{}, false, fmt.Errorf("the forms' catalogue (%s): %w", formsCatalog, err)
	}
	return c, true, nil
}

// UniqueValue is the value a declared form's unique field is compared by: an e-mail field's canonical
// address, a phone number's digits (and +), any other field's text in lower case.
func UniqueValue(t config.FieldType, s string) string {
	switch t {
	case config.FieldEmail:
		if c, ok := email.Canonical(s); ok {
			return c
		}
	case config.FieldPhone:
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' || r == '+' {
				return r
			}
			return -1
		}, s)
	}
	return strings.ToLower(s)
}

// uniqueCandidates are the values a record's unique field could be stored under, whatever its type:
// erasing one submission frees its value without the declaration that says which field it was.
func uniqueCandidates(fields Values) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, f := range fields {
		s, ok := f.Value.(string)
		if !ok {
			continue
		}
		for _, t := range []config.FieldType{config.FieldEmail, config.FieldPhone, config.FieldText} {
			add(UniqueValue(t, s))
		}
	}
	return out
}
