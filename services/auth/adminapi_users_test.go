package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/passkey"
)

func get(path, token string) apiCall {
	return apiCall{method: http.MethodGet, path: path, token: token}
}

func post(path, token, body string) apiCall {
	return apiCall{method: http.MethodPost, path: path, token: token, body: body}
}

// Accounts are created (verified by default; with or without a password), read back, and found by a part
// of their address a page at a time, each page after the last address of the one before.
func TestAdminAPI_Users_CreateReadSearchPages(t *testing.T) {
	p := startAdminProvider(t, false)
	ops := p.token(opsClient, "users:read users:write")

	var ids []string
	for i := range 5 {
		body := fmt.Sprintf(`{"email":"Page%d@Example.com","name":"Page %d"}`, i, i)
		if i == 0 {
			body = `{"email":"page0@example.com","name":"Page 0","password":"a long and unusual passphrase 0","email_verified":false}`
		}
		a := p.api(post("/admin/v1/users", ops, body))
		if a.status != http.StatusCreated || a.body["email"] != fmt.Sprintf("page%d@example.com", i) || a.header.Get("Location") != "/admin/v1/users/"+a.body["id"].(string) {
			t.Fatalf("create %d: %d %s %s", i, a.status, a.header.Get("Location"), a.raw)
		}
		if verified := a.body["email_verified"] == true; verified != (i != 0) {
			t.Errorf("create %d: email_verified %v", i, a.body["email_verified"])
		}
		ids = append(ids, a.body["id"].(string))
	}
	p.user("other@example.org", testPassword)
	// The account made with a password signs in with it (verified or not, it is the password's account).
	if u, err := p.svc.Users().Authenticate(context.Background(), "page0@example.com", "a long and unusual passphrase 0"); err != nil || u.ID != ids[0] {
		t.Fatalf("sign in with the password given: %v", err)
	}

	a := p.api(get("/admin/v1/users/"+ids[2], ops))
	if a.status != http.StatusOK || a.body["id"] != ids[2] || a.body["name"] != "Page 2" || a.body["disabled"] != false || a.body["hash"] != nil {
		t.Fatalf("get: %d %s", a.status, a.raw)
	}
	problemOf(t, "an unknown user", p.api(get("/admin/v1/users/0123456789abcdef0123456789abcdef", ops)), http.StatusNotFound)

	var got []string
	cursor := ""
	for page := 0; ; page++ {
		path := "/admin/v1/users?q=EXAMPLE.COM&limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		a := p.api(get(path, ops))
		list, _ := a.body["users"].([]any)
		if a.status != http.StatusOK || len(list) > 2 || page > 3 {
			t.Fatalf("page %d: %d %s", page, a.status, a.raw)
		}
		for _, u := range list {
			got = append(got, u.(map[string]any)["email"].(string))
		}
		next, _ := a.body["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	want := []string{"page0@example.com", "page1@example.com", "page2@example.com", "page3@example.com", "page4@example.com"}
	if !slices.Equal(got, want) {
		t.Fatalf("pages: %v, want %v", got, want)
	}
	if a := p.api(get("/admin/v1/users", ops)); a.status != http.StatusOK || len(a.body["users"].([]any)) != 6 || a.body["next_cursor"] != nil {
		t.Fatalf("all: %d %s", a.status, a.raw)
	}
	if a := p.api(get("/admin/v1/users?q=nobody-has-this", ops)); a.status != http.StatusOK || len(a.body["users"].([]any)) != 0 {
		t.Fatalf("none: %d %s", a.status, a.raw)
	}

	// Bad input: 400 naming the field, never a 500.
	for name, c := range map[string]struct {
		call  apiCall
		field string
	}{
		"a limit of 0":         {apiCall{method: http.MethodGet, path: "/admin/v1/users?limit=0", token: ops, badRequest: true}, "limit"},
		"a limit not a number": {apiCall{method: http.MethodGet, path: "/admin/v1/users?limit=ten", token: ops, badRequest: true}, "limit"},
		"a limit too large":    {apiCall{method: http.MethodGet, path: "/admin/v1/users?limit=201", token: ops, badRequest: true}, "limit"},
		"a forged cursor":      {get("/admin/v1/users?cursor=bm90LWEtY3Vyc29y", ops), "cursor"},
		"a cursor not base64":  {get("/admin/v1/users?cursor=%25%25", ops), "cursor"},
		"no address":           {apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: `{"name":"x"}`, badRequest: true}, "email"},
		"a bad address":        {post("/admin/v1/users", ops, `{"email":"not an address"}`), "email"},
		"a weak password":      {post("/admin/v1/users", ops, `{"email":"w@example.com","password":"password1234"}`), "password"},
		"an empty password":    {apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: `{"email":"w@example.com","password":""}`, badRequest: true}, "password"},
		"an unknown field":     {apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: `{"email":"w@example.com","admin":true}`, badRequest: true}, "admin"},
		"a field of a wrong type": {apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: `{"email":"w@example.com","email_verified":"yes"}`, badRequest: true},
			"email_verified"},
		"not JSON":        {apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: `{"email":`, badRequest: true}, "body"},
		"two objects":     {apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: `{"email":"w@example.com"}{}`, badRequest: true}, "body"},
		"a name too long": {apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: `{"email":"w@example.com","name":"` + strings.Repeat("n", 121) + `"}`, badRequest: true}, "name"},
	} {
		fields := problemOf(t, name, p.api(c.call), http.StatusBadRequest)
		if fields[c.field] == nil {
			t.Errorf("%s: errors %v name no %q", name, fields, c.field)
		}
	}
	problemOf(t, "an address taken", p.api(post("/admin/v1/users", ops, `{"email":"PAGE1@example.com"}`)), http.StatusConflict)
	problemOf(t, "a form body", p.api(apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops, body: "email=a%40b.example", contentType: "application/x-www-form-urlencoded",
		badRequest: true}), http.StatusUnsupportedMediaType)
	problemOf(t, "a body over the limit", p.api(apiCall{method: http.MethodPost, path: "/admin/v1/users", token: ops,
		body: `{"email":"w@example.com","name":"` + strings.Repeat("n", 17<<10) + `"}`, badRequest: true}), http.StatusRequestEntityTooLarge)

	// Each creation is audited with the API, the token's client and subject.
	var created []audit.Event
	for _, e := range trail(t, p.provider) {
		if e.Kind == audit.UserCreated {
			created = append(created, e)
		}
	}
	if len(created) != 5 || created[0].Actor != audit.ActorAdmin || created[0].Client != opsClient || created[0].Detail[audit.DetailActorSub] != opsClient ||
		created[0].User != ids[0] || created[1].Detail["verified"] != "true" || created[1].Detail["password"] != "none" {
		t.Fatalf("audit: %+v", created)
	}
}

// Disabling an account ends its sessions and grants (its refresh token is refused), and it cannot sign in
// until it is enabled again; the sessions and grants are listed before and gone after.
func TestAdminAPI_Users_DisableEndsSessionsGrantsAndRefresh(t *testing.T) {
	p := startAdminProvider(t, false)
	id := p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	reader, ops := p.token(readerClient, "users:read"), p.token(opsClient, "users:write")

	a := p.api(get("/admin/v1/users/"+id+"/sessions", reader))
	sessions, _ := a.body["sessions"].([]any)
	if a.status != http.StatusOK || len(sessions) != 1 || sessions[0].(map[string]any)["amr"] == nil {
		t.Fatalf("sessions: %d %s", a.status, a.raw)
	}
	a = p.api(get("/admin/v1/users/"+id+"/grants", reader))
	grants, _ := a.body["grants"].([]any)
	if a.status != http.StatusOK || len(grants) != 1 || grants[0].(map[string]any)["client_id"] != clientID || grants[0].(map[string]any)["offline"] != true {
		t.Fatalf("grants: %d %s", a.status, a.raw)
	}

	a = p.api(post("/admin/v1/users/"+id+"/disable", ops, ""))
	if a.status != http.StatusOK || a.body["grants_revoked"] != float64(1) || a.body["sessions_ended"] != float64(1) || a.body["user"].(map[string]any)["disabled"] != true {
		t.Fatalf("disable: %d %s", a.status, a.raw)
	}
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest || r.Error != "invalid_grant" {
		t.Fatalf("a disabled user's refresh token: %d %s, want 400 invalid_grant", r.status, r.Error)
	}
	if st := p.userinfoStatus(tk.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("a disabled user's access token at userinfo: %d", st)
	}
	for _, what := range []string{"sessions", "grants"} {
		if a := p.api(get("/admin/v1/users/"+id+"/"+what, reader)); a.status != http.StatusOK || len(a.body[what].([]any)) != 0 {
			t.Fatalf("%s after disable: %s", what, a.raw)
		}
	}
	if _, err := p.svc.Users().Authenticate(context.Background(), testEmail, testPassword); err == nil {
		t.Fatal("a disabled account signed in")
	}
	a = p.api(post("/admin/v1/users/"+id+"/enable", ops, "{}"))
	if a.status != http.StatusOK || a.body["disabled"] != false {
		t.Fatalf("enable: %d %s", a.status, a.raw)
	}
	if _, err := p.svc.Users().Authenticate(context.Background(), testEmail, testPassword); err != nil {
		t.Fatalf("an enabled account: %v", err)
	}
	// An action takes no body but an empty object.
	fields := problemOf(t, "a body on an action", p.api(apiCall{method: http.MethodPost, path: "/admin/v1/users/" + id + "/disable", token: ops, body: `{"now":true}`}), http.StatusBadRequest)
	if fields["now"] == nil {
		t.Errorf("errors: %v", fields)
	}
	problemOf(t, "an unknown user", p.api(post("/admin/v1/users/nobody/disable", ops, "")), http.StatusNotFound)

	var kinds []string
	for _, e := range trail(t, p.provider) {
		if e.Actor == audit.ActorAdmin {
			kinds = append(kinds, string(e.Kind))
			if e.User != id || e.Client != opsClient || e.Detail[audit.DetailActorSub] != opsClient {
				t.Errorf("event %+v", e)
			}
		}
	}
	if !slices.Equal(kinds, []string{"user.disabled", "user.signout_everywhere", "user.enabled"}) {
		t.Fatalf("audit: %v", kinds)
	}
}

// Groups are replaced in one step; the second factor is reset; a sign-out everywhere ends sessions and
// grants; a deleted account is gone (404) with all it held. Each change is audited.
func TestAdminAPI_Users_GroupsMFASignOutDelete(t *testing.T) {
	p := startAdminProvider(t, false)
	id := p.user(testEmail, testPassword)
	ops := p.token(opsClient, "users:read users:write")
	ctx := context.Background()
	if _, _, err := p.svc.Users().AddGroups(ctx, testEmail, []string{"old"}); err != nil {
		t.Fatal(err)
	}

	put := func(body string, bad bool) apiAnswer {
		return p.api(apiCall{method: http.MethodPut, path: "/admin/v1/users/" + id + "/groups", token: ops, body: body, badRequest: bad})
	}
	a := put(`{"groups":["ops","dev","ops"]}`, false)
	if a.status != http.StatusOK || fmt.Sprint(a.body["groups"]) != "[dev ops]" || fmt.Sprint(a.body["added"]) != "[dev ops]" || fmt.Sprint(a.body["removed"]) != "[old]" {
		t.Fatalf("set groups: %d %s", a.status, a.raw)
	}
	if u, _ := p.svc.Users().ByID(ctx, id); !slices.Equal(u.Groups, []string{"dev", "ops"}) {
		t.Fatalf("stored groups: %v", u.Groups)
	}
	problemOf(t, "a group with a space", put(`{"groups":["has space"]}`, true), http.StatusBadRequest)
	problemOf(t, "no groups field", put(`{}`, true), http.StatusBadRequest)
	problemOf(t, "groups not an array", put(`{"groups":"ops"}`, true), http.StatusBadRequest)
	problemOf(t, "too many groups", put(`{"groups":[`+manyGroups(40)+`]}`, true), http.StatusBadRequest)
	if a := put(`{"groups":[]}`, false); a.status != http.StatusOK || len(a.body["groups"].([]any)) != 0 {
		t.Fatalf("no groups: %d %s", a.status, a.raw)
	}

	del := func(path string) apiAnswer { return p.api(apiCall{method: http.MethodDelete, path: path, token: ops}) }
	if a := del("/admin/v1/users/" + id + "/mfa"); a.status != http.StatusOK || a.body["removed"] != false {
		t.Fatalf("reset without a factor: %d %s", a.status, a.raw)
	}
	factors := mfa.NewStore(p.rdb, mfa.Sealer{}, nil)
	key, err := factors.Pending(ctx, id, "Acme", testEmail, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, err := mfa.Code(key.Secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, res, err := factors.Confirm(ctx, id, code); err != nil || res != mfa.Accepted {
		t.Fatalf("enrolling an app: %v %v", res, err)
	}
	if a := del("/admin/v1/users/" + id + "/mfa"); a.status != http.StatusOK || a.body["removed"] != true || a.body["recovery_codes_removed"] != float64(10) {
		t.Fatalf("reset: %d %s", a.status, a.raw)
	}
	if st, _ := factors.Status(ctx, id); st.TOTP || st.RecoveryLeft != 0 {
		t.Fatalf("after the reset: %+v", st)
	}

	tk, _ := p.fullSignIn(testEmail, testPassword)
	a = p.api(post("/admin/v1/users/"+id+"/sign-out", ops, ""))
	if a.status != http.StatusOK || a.body["grants_revoked"] != float64(1) || a.body["sessions_ended"] != float64(1) {
		t.Fatalf("sign-out: %d %s", a.status, a.raw)
	}
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest {
		t.Fatalf("refresh after a sign-out everywhere: %d", r.status)
	}

	if a := del("/admin/v1/users/" + id); a.status != http.StatusNoContent || len(a.raw) != 0 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	problemOf(t, "a deleted user", p.api(get("/admin/v1/users/"+id, ops)), http.StatusNotFound)
	problemOf(t, "delete again", del("/admin/v1/users/"+id), http.StatusNotFound)
	if _, err := p.svc.Users().ByEmail(ctx, testEmail); err == nil {
		t.Fatal("the address still names an account")
	}

	var kinds []string
	for _, e := range trail(t, p.provider) {
		if e.Actor == audit.ActorAdmin {
			kinds = append(kinds, string(e.Kind)+" "+e.Detail["group"])
		}
	}
	want := []string{"user.group_added dev", "user.group_added ops", "user.group_removed old", "user.group_removed dev", "user.group_removed ops",
		"user.mfa_reset ", "user.signout_everywhere ", "user.deleted "}
	if !slices.Equal(kinds, want) {
		t.Fatalf("audit: %q, want %q", kinds, want)
	}
}

// The verification link is mailed at once; a verified or disabled account, or a language the mails
// are not written in, is refused.
func TestAdminAPI_Users_SendVerification(t *testing.T) {
	p := startAdminProvider(t, true)
	ops := p.token(opsClient, "users:write")
	id := p.unverifiedUser("new@example.com", testPassword)
	if a := p.api(post("/admin/v1/users/"+id+"/verification", ops, `{"lang":"de"}`)); a.status != http.StatusNoContent {
		t.Fatalf("send: %d %s", a.status, a.raw)
	}
	m := p.mail.Latest(t, "new@example.com", 10*time.Second)
	if !strings.Contains(m.Subject, "Bestätigen") || len(m.Links()) == 0 {
		t.Fatalf("the mail: %q %v", m.Subject, m.Links())
	}
	problemOf(t, "a language not ours", p.api(apiCall{method: http.MethodPost, path: "/admin/v1/users/" + id + "/verification", token: ops, body: `{"lang":"fr"}`, badRequest: true}), http.StatusBadRequest)
	verified := p.user("old@example.com", testPassword)
	problemOf(t, "a verified account", p.api(post("/admin/v1/users/"+verified+"/verification", ops, "")), http.StatusConflict)
	if _, err := p.svc.Users().SetDisabled(context.Background(), "new@example.com", true); err != nil {
		t.Fatal(err)
	}
	problemOf(t, "a disabled account", p.api(post("/admin/v1/users/"+id+"/verification", ops, "")), http.StatusConflict)
	var sent []audit.Event
	for _, e := range trail(t, p.provider) {
		if e.Kind == audit.VerificationSent && e.Actor == audit.ActorAdmin {
			sent = append(sent, e)
		}
	}
	if len(sent) != 1 || sent[0].User != id || sent[0].Detail["trigger"] != "admin" || sent[0].Client != opsClient {
		t.Fatalf("audit: %+v", sent)
	}
}

// Without a mail relay the API says so (409) rather than report a mail sent.
func TestAdminAPI_Users_SendVerificationWithoutRelay(t *testing.T) {
	p := startAdminProvider(t, false)
	id := p.unverifiedUser("new@example.com", testPassword)
	a := p.api(post("/admin/v1/users/"+id+"/verification", p.token(opsClient, "users:write"), ""))
	problemOf(t, "no relay", a, http.StatusConflict)
	if !strings.Contains(fmt.Sprint(a.body["detail"]), "relay") {
		t.Errorf("detail: %v", a.body["detail"])
	}
}

// manyGroups is a JSON list of n distinct group names.
func manyGroups(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf(`"g%d"`, i)
	}
	return strings.Join(names, ",")
}

// seedPasskey stores a passkey of userID as package passkey keeps it (registering one takes a WebAuthn
// ceremony, which passkey_browser_test.go runs in Chromium): its record, and its use (count|last used|
// cloned, Unix seconds).
func seedPasskey(t *testing.T, rdb redis.UniversalClient, userID, id, name string, created, lastUsed time.Time) {
	t.Helper()
	rec := fmt.Sprintf(`{"name":%q,"created":%d,"synced":true,"cred":{}}`, name, created.Unix())
	use := fmt.Sprintf("3|%d|0", lastUsed.Unix())
	if lastUsed.IsZero() {
		use = "0|0|0"
	}
	if err := rdb.HSet(t.Context(), "auth:passkey:{"+userID+"}", id, rec).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(t.Context(), "auth:passkey:{"+userID+"}:use", id, use).Err(); err != nil {
		t.Fatal(err)
	}
}

// An account's factors are read (users:read): the second factor's state and recovery codes left, the
// passkeys with names and times; a passkey is removed (users:write), audited with the token's subject,
// and no longer signs in; removing it again or another account's is 404.
func TestAdminAPI_Users_FactorsAndPasskeyRemoval(t *testing.T) {
	p := startAdminProvider(t, false)
	id := p.user(testEmail, testPassword)
	other := p.user("other@example.com", testPassword)
	reader, ops := p.token(readerClient, "users:read"), p.token(opsClient, "users:read users:write")
	ctx := context.Background()

	a := p.api(get("/admin/v1/users/"+id+"/factors", reader))
	if a.status != http.StatusOK || fmt.Sprint(a.body["second_factor"]) != "map[recovery_codes_left:0 totp:false]" || len(a.body["passkeys"].([]any)) != 0 {
		t.Fatalf("no factors: %d %s", a.status, a.raw)
	}

	factors := mfa.NewStore(p.rdb, mfa.Sealer{}, nil)
	key, err := factors.Pending(ctx, id, "Acme", testEmail, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := mfa.Code(key.Secret, time.Now())
	codes, res, err := factors.Confirm(ctx, id, code)
	if err != nil || res != mfa.Accepted {
		t.Fatalf("enrolling an app: %v %v", res, err)
	}
	if ok, err := factors.UseRecoveryCode(ctx, id, codes[0]); err != nil || !ok {
		t.Fatalf("using a recovery code: %v %v", ok, err)
	}
	created, used := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	seedPasskey(t, p.rdb, id, "cGFzc2tleS1vbmU", "Work laptop", created, used)
	seedPasskey(t, p.rdb, id, "cGFzc2tleS10d28", "Phone", created.Add(time.Hour), time.Time{})

	a = p.api(get("/admin/v1/users/"+id+"/factors", reader))
	sf, _ := a.body["second_factor"].(map[string]any)
	if a.status != http.StatusOK || sf["totp"] != true || sf["recovery_codes_left"] != float64(9) || sf["enrolled_at"] == nil {
		t.Fatalf("the second factor: %d %s", a.status, a.raw)
	}
	keys, _ := a.body["passkeys"].([]any)
	if len(keys) != 2 {
		t.Fatalf("passkeys: %s", a.raw)
	}
	first, second := keys[0].(map[string]any), keys[1].(map[string]any)
	if first["id"] != "cGFzc2tleS1vbmU" || first["name"] != "Work laptop" || first["created_at"] != "2026-10-01T09:00:00Z" ||
		first["last_used_at"] != "2026-11-02T10:30:00Z" || first["synced"] != true {
		t.Errorf("the first passkey: %v", first)
	}
	if second["name"] != "Phone" || second["last_used_at"] != nil {
		t.Errorf("the passkey never used: %v", second)
	}
	if strings.Contains(string(a.raw), "cred") || strings.Contains(string(a.raw), "public") {
		t.Errorf("the answer shows a key: %s", a.raw)
	}

	del := func(path, token string) apiAnswer {
		return p.api(apiCall{method: http.MethodDelete, path: path, token: token})
	}
	problemOf(t, "removing with users:read", del("/admin/v1/users/"+id+"/passkeys/cGFzc2tleS1vbmU", reader), http.StatusForbidden)
	problemOf(t, "another account's passkey", del("/admin/v1/users/"+other+"/passkeys/cGFzc2tleS1vbmU", ops), http.StatusNotFound)
	problemOf(t, "a passkey of an unknown account", del("/admin/v1/users/0123456789abcdef0123456789abcdef/passkeys/cGFzc2tleS1vbmU", ops), http.StatusNotFound)
	problemOf(t, "not a credential ID", del("/admin/v1/users/"+id+"/passkeys/not%20base64", ops), http.StatusNotFound)
	if a := del("/admin/v1/users/"+id+"/passkeys/cGFzc2tleS1vbmU", ops); a.status != http.StatusNoContent || len(a.raw) != 0 {
		t.Fatalf("remove: %d %s", a.status, a.raw)
	}
	problemOf(t, "removing it again", del("/admin/v1/users/"+id+"/passkeys/cGFzc2tleS1vbmU", ops), http.StatusNotFound)
	left, err := passkey.NewStore(p.rdb, nil).List(ctx, id)
	if err != nil || len(left) != 1 || left[0].Name != "Phone" {
		t.Fatalf("the passkeys left: %+v %v", left, err)
	}
	problemOf(t, "the factors of an unknown account", p.api(get("/admin/v1/users/0123456789abcdef0123456789abcdef/factors", reader)), http.StatusNotFound)

	var removed []audit.Event
	for _, e := range trail(t, p.provider) {
		if e.Kind == audit.PasskeyRemoved {
			removed = append(removed, e)
		}
	}
	if len(removed) != 1 || removed[0].Actor != audit.ActorAdmin || removed[0].Client != opsClient || removed[0].User != id ||
		removed[0].Detail["passkey"] != "cGFzc2tleS1vbmU" || removed[0].Detail[audit.DetailActorSub] != opsClient || removed[0].Outcome != audit.Success {
		t.Fatalf("audit: %+v", removed)
	}
}
