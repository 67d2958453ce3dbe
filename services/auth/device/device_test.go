package device_test

import (
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/auth/device"
)

var (
	now  = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	keyA = []byte("0123456789abcdef0123456789abcdef")
	keyB = []byte("fedcba9876543210fedcba9876543210")
)

// A token is good for its own account only, within its lifetime, under the current or the previous
// key; every other token, forged or altered, is refused. It names no address.
func TestCheck_OwnAccountOnlyWithinLifetimeUnderEitherKey(t *testing.T) {
	k := device.Keys{Current: keyA}
	issue := func(account string, at time.Time) string { return device.Issue(k, account, device.NewID(), 7, at) }
	tok := issue("ada@example.com", now)
	if strings.Contains(tok, "ada") {
		t.Fatalf("the token names the address: %s", tok)
	}
	got, ok := device.Check(k, tok, "ada@example.com", now.Add(time.Hour), 24*time.Hour)
	if !ok || got.ID == "" || got.Generation != 7 {
		t.Fatalf("a fresh token of the account: %+v %v", got, ok)
	}
	if other := issue("ada@example.com", now); other == tok {
		t.Fatal("two browsers' tokens of one account are the same: a browser's budget must be its own")
	}
	// A browser signing in again keeps its ID (one budget per browser and account), at the new generation.
	again, ok := device.Check(k, device.Issue(k, "ada@example.com", got.ID, 8, now.Add(time.Minute)), "ada@example.com", now.Add(time.Hour), 24*time.Hour)
	if !ok || again.ID != got.ID || again.Generation != 8 {
		t.Fatalf("the browser's next token: %+v %v, want its ID at generation 8", again, ok)
	}
	for name, c := range map[string]struct {
		k       device.Keys
		tok     string
		account string
		at      time.Time
	}{
		"another account":              {k, tok, "grace@example.com", now},
		"expired":                      {k, tok, "ada@example.com", now.Add(25 * time.Hour)},
		"another key":                  {device.Keys{Current: keyB}, tok, "ada@example.com", now},
		"altered id":                   {k, strings.Replace(tok, ".", ".x", 2), "ada@example.com", now},
		"garbage":                      {k, "v2.a.b.c.d.e", "ada@example.com", now},
		"altered generation":           {k, strings.Replace(tok, ".7.", ".8.", 1), "ada@example.com", now},
		"a v1 token (no generation)":   {k, "v1.mNrW9AzR0WWIInYdIPoUSg.7kJ3kkBu19suo8s3tUgvcg.1893553445.rloIt7-pw-hXzqU_RzEEmWm43S8yACaiqPypAbzhrug", "ada@example.com", now},
		"empty":                        {k, "", "ada@example.com", now},
		"issued far in the future":     {k, issue("ada@example.com", now.Add(48*time.Hour)), "ada@example.com", now},
		"another version":              {k, "v3" + tok[2:], "ada@example.com", now},
		"signature of another account": {k, issue("grace@example.com", now), "ada@example.com", now},
	} {
		if _, ok := device.Check(c.k, c.tok, c.account, c.at, 24*time.Hour); ok {
			t.Errorf("%s: accepted", name)
		}
	}
	// After a rotation the previous key still verifies.
	if _, ok := device.Check(device.Keys{Current: keyB, Previous: [][]byte{keyA}}, tok, "ada@example.com", now, 24*time.Hour); !ok {
		t.Fatal("a token signed with the previous key was refused during the rotation")
	}
}

// No input is accepted unless it is exactly a token the key issued, and none makes Check panic.
func FuzzCheck(f *testing.F) {
	k := device.Keys{Current: keyA}
	// A token Issue made with keyA for ada at now, with a fixed browser ID, so that every fuzz worker
	// process knows the one good input.
	good := device.Issue(k, "ada@example.com", "7kJ3kkBu19suo8s3tUgvcg", 3, now)
	if _, ok := device.Check(k, good, "ada@example.com", now, time.Hour); !ok {
		f.Fatal("the fixed good token does not verify")
	}
	for _, seed := range []string{good, "", "v2.....", "v2.a.b.c.d.e", strings.Repeat(".", 300), good + ".", "v2." + strings.Repeat("A", 250)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		_, ok := device.Check(k, tok, "ada@example.com", now, time.Hour)
		if ok && tok != good {
			t.Fatalf("accepted a token the key did not issue: %q", tok)
		}
	})
}
