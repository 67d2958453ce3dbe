package store

import (
	"context"
	"testing"
	"time"

	"github.com/ory/fosite"
)

type testSession struct {
	Sub string `json:"sub"`
}

func (s *testSession) SetExpiresAt(fosite.TokenType, time.Time) {}
func (s *testSession) GetExpiresAt(fosite.TokenType) time.Time  { return time.Time{} }
func (s *testSession) GetUsername() string                      { return "" }
func (s *testSession) GetSubject() string                       { return s.Sub }
func (s *testSession) Clone() fosite.Session                    { c := *s; return &c }

// A unit encodes the access and the refresh token of one response once (D43) when they are the same
// request: fosite's two sanitized copies of it, or one copy twice. Anything encode reads that differs
// (another session, even an equal one, or another field) is encoded anew, and every record is what
// encode makes of its own request.
func TestUnitEncode_OncePerRequest_AnewForAnyDifference(t *testing.T) {
	s := &Store{lifetimes: func() Lifetimes { return Lifetimes{Code: time.Minute, Access: time.Minute, Refresh: time.Hour} }}
	ctx, _ := s.BeginTX(context.Background())
	u := ctx.Value(txKey{}).(*unit)
	req := fosite.NewRequest()
	req.ID = "0f6a3b9e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
	req.Client = &fosite.DefaultClient{ID: "app"}
	req.Session = &testSession{Sub: "user-1"}
	req.GrantedScope = fosite.Arguments{"openid", "offline_access"}
	req.Form.Set("grant_type", "refresh_token")

	record := func(r fosite.Requester) string {
		t.Helper()
		v, err := u.encode(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := encode(r)
		if v != want {
			t.Fatalf("record %s, want encode's %s", v, want)
		}
		return v
	}
	at := req.Sanitize(nil)
	record(at)
	if u.encodedFor != at {
		t.Fatal("the encoding was not kept")
	}
	record(req.Sanitize(nil)) // the refresh token's copy: the same encoding
	if u.encodedFor != at {
		t.Fatal("the second copy of the same request was encoded again")
	}
	other := req.Sanitize(nil).(*fosite.Request)
	other.GrantedScope = fosite.Arguments{"openid"}
	record(other)
	if u.encodedFor != other {
		t.Fatal("a request with other scopes reused the encoding")
	}
	equal := req.Sanitize(nil).(*fosite.Request)
	equal.Session = &testSession{Sub: "user-2"}
	record(equal)
	if u.encodedFor != equal {
		t.Fatal("a request with another session reused the encoding")
	}
	later := equal.Sanitize(nil).(*fosite.Request)
	later.RequestedAt = later.RequestedAt.Add(time.Second)
	record(later)
	if u.encodedFor != later {
		t.Fatal("a request of another time reused the encoding")
	}
	_ = s.Rollback(ctx)
	if u.encodedFor != nil || u.encoded != "" {
		t.Fatal("a rolled back unit kept its encoding")
	}
}
