package render

import (
	"encoding/json"
	"reflect"
	"testing"
)

// typed reads an apply configuration back as the API type it configures, the way the API server reads
// the request, so that tests can look at the rendered object field by field. A nil apply configuration
// gives nil.
func typed[T any](t *testing.T, ac any) *T {
	t.Helper()
	if ac == nil || (reflect.ValueOf(ac).Kind() == reflect.Pointer && reflect.ValueOf(ac).IsNil()) {
		return nil
	}
	b, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s does not read as %T: %v", b, out, err)
	}
	return out
}
