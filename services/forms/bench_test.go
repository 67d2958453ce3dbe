package forms

import (
	"testing"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/email"
)

const benchContact = `{"name":"Ada Lovelace","email":"ada.lovelace@example.com","organization":"Analytical Engines Ltd",` +
	`"topic":"sales","message":"Hello team, we would like to know more about pricing for a club of 120 members. Thanks!"}`

func BenchmarkDecodeContact(b *testing.B) {
	body := []byte(benchContact)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, errs := DecodeContact(body); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkDecodeWaitlist(b *testing.B) {
	body := []byte(`{"email":"Ada.Lovelace@Example.com","consent":true,"name":"Ada","association":"Club","role":"member","size":"51-250"}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, errs := DecodeWaitlist(body); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkDecodeContact_Invalid(b *testing.B) {
	body := []byte(`{"name":"","email":"not an address","topic":"jobs","message":"short"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, errs := DecodeContact(body); errs == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkValidEmail_IDN(b *testing.B) {
	for b.Loop() {
		if !email.Valid("zoë@bücher.example.de") && !email.Valid("zoe@bücher.example.de") {
			b.Fatal("refused")
		}
	}
}

func BenchmarkOriginAllowed(b *testing.B) {
	m := newOriginMatcher([]string{"https://www.example.com", "https://*.example.org", "http://localhost:3000"})
	exact, wild := []byte("https://www.example.com"), []byte("https://app.example.org")
	for b.Loop() {
		if !m.allowed(exact) || !m.allowed(wild) {
			b.Fatal("refused")
		}
	}
}

// The bench's declared form (cmd/loadgen: demo8) and the body it posts.
var benchDeclared = config.DeclaredForm{ID: "demo8", Unique: "email", Fields: []config.FormField{
	{Name: "company", Type: config.FieldText, Required: true}, {Name: "email", Type: config.FieldEmail, Required: true},
	{Name: "role", Type: config.FieldOneOf, Choices: []string{"engineer", "manager", "other"}},
	{Name: "budget", Type: config.FieldNumber, Min: "0"}, {Name: "start", Type: config.FieldDate},
	{Name: "interests", Type: config.FieldManyOf, Choices: []string{"forms", "sign-in", "health"}},
	{Name: "notes", Type: config.FieldLongText}, {Name: "consent", Type: config.FieldConsent},
}}

const benchDeclaredBody = `{"company":"Bench Club","email":"load1@example.com","role":"manager","budget":12000,"start":"2027-01-15","interests":["forms","health"],"notes":"We would like a demo for a club of 120 members.","consent":true}`

func BenchmarkDecodeDeclared(b *testing.B) {
	body := []byte(benchDeclaredBody)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, _, errs := decodeDeclared(&benchDeclared, bodyFormat{kind: kindJSON}, body, wantExtras{}); errs != nil {
			b.Fatal(errs)
		}
	}
}
