package mfa

import (
	"image"
	"image/color"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"github.com/pquerna/otp/totp"
)

// t0 is a moment in the middle of a time step.
var t0 = time.Unix(1_800_000_015, 0)

func TestMatch_TheStepWithinOneStepEitherSide(t *testing.T) {
	k, err := NewKey("id.example", "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	now := Step(t0)
	for _, d := range []int64{-1, 0, 1} {
		code, _ := Code(k.Secret, time.Unix((now+d)*Period, 0))
		step, res := Match(k.Secret, code, t0, -1)
		if res != Accepted || step != now+d {
			t.Errorf("the code of step %+d: %v at step %d, want Accepted at %d", d, res, step, now+d)
		}
	}
	for _, d := range []int64{-3, -2, 2, 3} {
		code, _ := Code(k.Secret, time.Unix((now+d)*Period, 0))
		if other, _ := Code(k.Secret, t0); other == code {
			continue // a collision of two steps' codes (one in a million)
		}
		if _, res := Match(k.Secret, code, t0, -1); res != Wrong {
			t.Errorf("the code of step %+d: %v, want Wrong", d, res)
		}
	}
	if _, res := Match(k.Secret, "000000", t0, -1); res == Accepted {
		if c, _ := Code(k.Secret, t0); c != "000000" {
			t.Error("000000 accepted")
		}
	}
}

// RFC 6238 5.2: a code is accepted once. A code of a step at or before the last one accepted is
// Replayed, never Accepted, and a later step's code still is.
func TestMatch_AStepAcceptedBeforeIsReplayed(t *testing.T) {
	k, _ := NewKey("id.example", "ada@example.com")
	now := Step(t0)
	code, _ := Code(k.Secret, t0)
	if _, res := Match(k.Secret, code, t0, now); res != Replayed {
		t.Errorf("the accepted step's code again: %v, want Replayed", res)
	}
	earlier, _ := Code(k.Secret, time.Unix((now-1)*Period, 0))
	if _, res := Match(k.Secret, earlier, t0, now); res != Replayed {
		t.Errorf("an earlier step's code after a later one was accepted: %v, want Replayed", res)
	}
	later, _ := Code(k.Secret, time.Unix((now+1)*Period, 0))
	if step, res := Match(k.Secret, later, t0, now); res != Accepted || step != now+1 {
		t.Errorf("the next step's code: %v at %d, want Accepted at %d", res, step, now+1)
	}
}

// The codes are the library's (RFC 6238 with SHA-1, six digits, 30 s): what every authenticator app
// shows. The secret is 160 bits, and the URI carries what an app needs.
func TestNewKey_AnAuthenticatorAppsKey(t *testing.T) {
	k, err := NewKey("id.example", "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Secret) != 32 { // 20 bytes in base32 without padding
		t.Errorf("secret %q: want 32 base32 characters (160 bits)", k.Secret)
	}
	u, err := url.Parse(k.URI)
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/id.example:ada@example.com" {
		t.Fatalf("URI %q", k.URI)
	}
	q := u.Query()
	if q.Get("secret") != k.Secret || q.Get("issuer") != "id.example" || q.Get("digits") != "6" || q.Get("period") != "30" || q.Get("algorithm") != "SHA1" {
		t.Errorf("URI query %v", q)
	}
	code, _ := Code(k.Secret, t0)
	if !totpValidAt(code, k.Secret, t0) {
		t.Errorf("the library does not accept our code %s", code)
	}
	other, _ := NewKey("id.example", "ada@example.com")
	if other.Secret == k.Secret {
		t.Error("two keys with one secret")
	}
}

func totpValidAt(code, secret string, at time.Time) bool {
	ok, _ := totp.ValidateCustom(code, secret, at, opts)
	return ok
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{"123456": "123456", " 123 456 ": "123456", "123-456": "123456", "123\u00a0456": "123456"} {
		if got, err := NormalizeCode(in); err != nil || got != want {
			t.Errorf("NormalizeCode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "12345", "1234567", "12345a", "１２３４５６", "abcdef"} {
		if _, err := NormalizeCode(in); err == nil {
			t.Errorf("NormalizeCode(%q) accepted", in)
		}
	}
}

var codeFormat = regexp.MustCompile(`^[a-hjkmnp-z2-9]{4}(-[a-hjkmnp-z2-9]{4}){3}$`)

func TestNewRecoveryCodes_TenDistinctCodesOfTheAlphabet(t *testing.T) {
	codes := NewRecoveryCodes()
	if len(codes) != 10 {
		t.Fatalf("%d codes", len(codes))
	}
	seen := map[string]bool{}
	for _, c := range codes {
		if !codeFormat.MatchString(c) {
			t.Errorf("code %q: want four groups of four of %s", c, recoveryAlphabet)
		}
		if seen[c] {
			t.Errorf("code %q twice", c)
		}
		seen[c] = true
		if n := NormalizeRecoveryCode(strings.ToUpper(" " + c + " ")); n != strings.ReplaceAll(c, "-", "") {
			t.Errorf("NormalizeRecoveryCode(upper case %q) = %q", c, n)
		}
	}
	// Every letter of the alphabet turns up, and nothing else: the draw covers it (no modulo gap).
	all := strings.Join(NewRecoveryCodesN(200), "")
	for _, r := range recoveryAlphabet {
		if !strings.ContainsRune(all, r) {
			t.Errorf("%q never drawn in 200 codes", r)
		}
	}
}

// NewRecoveryCodesN draws n codes (tests only).
func NewRecoveryCodesN(n int) []string {
	var out []string
	for len(out) < n {
		out = append(out, NewRecoveryCodes()...)
	}
	return out
}

func TestNormalizeRecoveryCode_RefusesWhatIsNoCode(t *testing.T) {
	for _, in := range []string{"", "123456", "abcd-efgh-jkmn", "abcd-efgh-jkmn-pqrs-t", "abcd-efgh-jkmn-pqr0", "abcd-efgh-jkmn-pqrl", "abcd efgh jkmn pqr\u00e9"} {
		if got := NormalizeRecoveryCode(in); got != "" {
			t.Errorf("NormalizeRecoveryCode(%q) = %q, want refused", in, got)
		}
	}
	if LooksLikeRecoveryCode("123456") || !LooksLikeRecoveryCode("ABCD EFGH JKMN PQRS") {
		t.Error("a TOTP code and a recovery code told apart wrongly")
	}
}

var pathRun = regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-(\d+)z`)

// The QR code the page shows decodes, with a real QR reader, to the otpauth URI: the SVG path is drawn
// back as pixels and read by gozxing (a port of ZXing, the reader many apps use).
func TestQRSVG_DecodesToTheURI(t *testing.T) {
	k, _ := NewKey("id.example", "zoë+test@example.com")
	svg, err := QRSVG(k.URI, "QR code")
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if !strings.HasPrefix(s, "<svg ") || strings.Contains(s, "style") || !strings.Contains(s, `role="img" aria-label="QR code"`) {
		t.Fatalf("svg: %.200s", s)
	}
	size, _ := strconv.Atoi(regexp.MustCompile(`viewBox="0 0 (\d+) `).FindStringSubmatch(s)[1])
	const scale = 4
	img := image.NewGray(image.Rect(0, 0, size*scale, size*scale))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for _, m := range pathRun.FindAllStringSubmatch(s, -1) {
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		for px := x * scale; px < (x+n)*scale; px++ {
			for py := y * scale; py < (y+1)*scale; py++ {
				img.SetGray(px, py, color.Gray{})
			}
		}
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	// Read as a pure code (the image is the rendered grid, upright, with its quiet zone): module for
	// module what the SVG draws. gozxing's camera-image detector, without the hint, missed 7 of 400
	// random keys' codes (18 of 1,000 with TRY_HARDER) that read exactly this way: a flaky test, not
	// a wrong code.
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	if err != nil {
		t.Fatalf("the QR code does not read: %v", err)
	}
	if res.GetText() != k.URI {
		t.Errorf("QR code reads %q, want %q", res.GetText(), k.URI)
	}
}
