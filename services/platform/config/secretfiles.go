package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// SecretFile is a file named by the configuration that holds a secret: a key, a password, a client
// secret, a webhook URL with its token.
type SecretFile struct {
	Key  string // the configuration key, e.g. auth.clients[0].secretFile
	Path string
}

// notSecret are the *File keys that name public material (a CA bundle, a client's public keys).
var notSecret = []string{"caFile", "jwksFile"}

// SecretFiles lists the secret files the configuration names, found by key (every key ending in File
// but a CA bundle), so that a setting added later is covered without being listed here.
func (c *Config) SecretFiles() []SecretFile {
	var out []SecretFile
	walkSecretFiles(reflect.ValueOf(c).Elem(), "", &out)
	return out
}

func walkSecretFiles(v reflect.Value, path string, out *[]SecretFile) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkSecretFiles(v.Elem(), path, out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				walkSecretFiles(v.Field(i), path, out)
				continue
			}
			if name == "" {
				name = f.Name
			}
			fv := v.Field(i)
			if fv.Kind() == reflect.String && strings.HasSuffix(name, "File") && !slices.Contains(notSecret, name) {
				if fv.String() != "" {
					*out = append(*out, SecretFile{Key: join(path, name), Path: fv.String()})
				}
				continue
			}
			walkSecretFiles(fv, join(path, name), out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkSecretFiles(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			walkSecretFiles(v.MapIndex(k), join(path, fmt.Sprint(k)), out)
		}
	}
}
