package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/audit"
)

// The forms' commands record their changes in the audit trail as the admin API does (the same kinds,
// package manage), with actor cli and the operating-system user.
func TestFormsTools_ChangesRecordedInTheTrail(t *testing.T) {
	rs := testredis.Start(t)
	rdb := rs.Client()
	addSpam(t, rdb, "fs:{contact}:spam", "1767323045000-0", `{"name":"Eve","email":"eve@example.com","topic":"general","message":"Buy pills"}`)
	addDeadLetter(t, rdb, "1767323046000-0", "ada@example.com")
	env := func(k string) string {
		if k == "USER" {
			return "ops"
		}
		return formsEnv(rs.URL())(k)
	}
	for _, args := range [][]string{
		{"spam", "release", "contact", "1767323045000-0"},
		{"deliveries", "drop", "1767323046000-0"},
		{"forget", "--email", "ada@example.com"},
		{"export", "contact"},
	} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), args, env, strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
	}
	var kinds []string
	for _, m := range rdb.XRange(t.Context(), audit.StreamKey, "-", "+").Val() {
		var e audit.Event
		if err := json.Unmarshal([]byte(m.Values["e"].(string)), &e); err != nil {
			t.Fatal(err)
		}
		if e.Actor != audit.ActorCLI || e.Detail["osUser"] != "ops" || strings.Contains(m.Values["e"].(string), "ada@") {
			t.Fatalf("event %+v", e)
		}
		kinds = append(kinds, string(e.Kind)+" "+e.Detail["id"])
	}
	want := "form.spam_released 1767323045000-0,form.dead_letter_discarded 1767323046000-0,form.address_erased ,form.exported "
	if strings.Join(kinds, ",") != want {
		t.Fatalf("the trail: %v", kinds)
	}
}

// A configuration that cannot chain the trail's security events (no auth.signingKeyFile: the forms
// pod's) does not add to a chained trail, which it would break (D52); the command says so.
func TestFormsTools_ChainedTrailNotBrokenWithoutTheKey(t *testing.T) {
	rs := testredis.Start(t)
	rdb := rs.Client()
	if err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: audit.StreamKey, Values: []any{"e", `{"kind":"signin"}`, "p", "", "h", "mac"}}).Err(); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := formsTool(t, rs.URL(), "forget", "--email", "ada@example.com")
	if err != nil || !strings.Contains(errOut, "form.address_erased was not recorded in the audit trail") {
		t.Fatalf("%v %q", err, errOut)
	}
	if n := rdb.XLen(t.Context(), audit.StreamKey).Val(); n != 1 {
		t.Fatalf("%d events, want the one there was", n)
	}
}
