package jsonobj

import (
	"fmt"
	"strings"
	"testing"
)

// Each reads every member in order and refuses a repeated one, among few members (a scan) and among
// many (a map), escaped spellings included.
func TestEach_ReadsEveryMemberAndRefusesARepeatedOne(t *testing.T) {
	object := func(n int, extra string) []byte {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`"k%d":%d`, i, i))
		}
		if extra != "" {
			parts = append(parts, extra)
		}
		return []byte("{" + strings.Join(parts, ",") + "}")
	}
	for _, n := range []int{1, 15, 16, 17, 200} {
		var got []string
		if err := Each(object(n, ""), func(k string, v Value) error { got = append(got, k+"="+v.Raw()); return nil }); err != nil || len(got) != n || got[n-1] != fmt.Sprintf("k%d=%d", n-1, n-1) {
			t.Errorf("%d members: %v, read %d", n, err, len(got))
		}
		for _, dup := range []string{`"k0":1`, `"k\u0030":1`, fmt.Sprintf(`"k%d":1`, n-1)} {
			if err := Each(object(n, dup), func(string, Value) error { return nil }); err != ErrInvalid {
				t.Errorf("%d members and %s again: %v", n, dup, err)
			}
		}
	}
	if err := Each([]byte(`{"a":1}`), func(string, Value) error { return fmt.Errorf("stop") }); err == nil || err.Error() != "stop" {
		t.Errorf("fn's error: %v", err)
	}
}

func TestStrings(t *testing.T) {
	for body, want := range map[string]string{`{"a":["x","y\u00e9"]}`: "x|yé", `{"a":[]}`: "", `{"a":["x",1]}`: "!", `{"a":"x"}`: "!"} {
		var v Value
		_ = Each([]byte(body), func(_ string, val Value) error { v = val; return nil })
		ss, ok := v.Strings()
		got := strings.Join(ss, "|")
		if !ok {
			got = "!"
		}
		if got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
