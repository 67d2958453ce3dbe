package store

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

var spamVerdict = Verdict{Spam: true, Score: 9.5, Reasons: []string{"links", "phrases"}}

// addFormSubmission stores a declared form's submission from address with verdict v.
func addFormSubmission(t *testing.T, st *Store, form, address string, v Verdict, idemKey string) Result {
	t.Helper()
	rec, err := AppendFormRecord(nil, FormRecord{Form: form, Fields: Values{{Name: "email", Value: address}, {Name: "notes", Value: "Buy cheap pills"}},
		ReceivedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	idem := Idempotency{}
	if idemKey != "" {
		idem = Idempotency{Origin: "https://www.example.com", Key: idemKey, Message: []byte(address)}
	}
	r, err := st.AddSubmission(t.Context(), Submission{Form: form, Client: netip.MustParseAddr("127.0.0.1"), Idem: idem,
		Record: rec, Unique: address, Verdict: v}, config.DurabilityProcess)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSpam_StoredInTheFolderNotForDelivery_AnsweredAsHam(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	q := FormQueue("demo")
	if r := addFormSubmission(t, st, "demo", "spammer@example.com", spamVerdict, "k1"); r.Outcome != Stored {
		t.Fatalf("spam answered %+v, want Stored as ham is", r)
	}
	if r := addFormSubmission(t, st, "demo", "spammer@example.com", spamVerdict, "k1"); r.Outcome != Replayed {
		t.Fatalf("a retry of spam with its Idempotency-Key answered %+v, want Replayed", r)
	}
	if n := rdb.XLen(t.Context(), q.Stream).Val(); n != 0 {
		t.Fatalf("%d entries in the delivery stream, want none", n)
	}
	got, next, err := ListSpam(t.Context(), rdb, q, "", 10)
	if err != nil || next != "" || len(got) != 1 {
		t.Fatalf("spam folder %+v next %q %v, want one entry", got, next, err)
	}
	if got[0].Verdict.Score != 9.5 || len(got[0].Verdict.Reasons) != 2 || string(got[0].Record) == "null" {
		t.Errorf("kept %+v, want the verdict and the record", got[0])
	}
	// Spam does not take its unique value: the genuine owner of the address can still send the form.
	if r := addFormSubmission(t, st, "demo", "spammer@example.com", Verdict{}, ""); r.Outcome != Stored {
		t.Errorf("ham with the address spam used answered %+v, want Stored", r)
	}
	// Refused spam is answered as ham and kept nowhere.
	if r := addFormSubmission(t, st, "demo", "other@example.com", Verdict{Spam: true, Refuse: true, Score: 5}, ""); r.Outcome != Stored {
		t.Errorf("refused spam answered %+v, want Stored", r)
	}
	if n, s := rdb.XLen(t.Context(), q.Stream).Val(), rdb.XLen(t.Context(), q.Spam).Val(); n != 1 || s != 1 {
		t.Errorf("%d delivery entries and %d spam, want 1 and 1", n, s)
	}
}

func TestSpam_ReleaseDeliversOnceWithItsID(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	rec := AppendContactRecord(nil, ContactRecord{Name: "Ada", Email: "ada@example.com", Topic: "general",
		Message: "Really a genuine question", ReceivedAt: time.Now().UTC()})
	if r, err := st.AddContactJudged(t.Context(), netip.MustParseAddr("127.0.0.1"), 0, Idempotency{}, rec, spamVerdict, config.DurabilityProcess); err != nil || r.Outcome != Stored {
		t.Fatalf("%+v %v", r, err)
	}
	got, _, err := ListSpam(t.Context(), rdb, ContactQueue, "", 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	id := got[0].ID
	if err := ReleaseSpam(t.Context(), rdb, ContactQueue, id); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseSpam(t.Context(), rdb, ContactQueue, id); !errors.Is(err, ErrNotInFolder) {
		t.Fatalf("a second release: %v, want ErrNotInFolder", err)
	}
	msgs := rdb.XRange(t.Context(), ContactStream, "-", "+").Val()
	if len(msgs) != 1 || MessageID(msgs[0]) != id || msgs[0].Values[RecordField] != string(rec) {
		t.Fatalf("delivery stream %v, want the one message with ID %s", msgs, id)
	}
	if n := rdb.XLen(t.Context(), ContactSpam).Val(); n != 0 {
		t.Errorf("%d left in the folder", n)
	}
}

func TestSpam_DeleteErases(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	q := FormQueue("demo")
	addFormSubmission(t, st, "demo", "a@example.com", spamVerdict, "")
	addFormSubmission(t, st, "demo", "b@example.com", spamVerdict, "")
	got, _, _ := ListSpam(t.Context(), rdb, q, "", 1)
	if err := DeleteSpam(t.Context(), rdb, q, got[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := DeleteSpam(t.Context(), rdb, q, got[0].ID); !errors.Is(err, ErrNotInFolder) {
		t.Errorf("a second delete: %v, want ErrNotInFolder", err)
	}
	for _, bad := range []string{"", "-", "abc", "1-", "-1", "+", "1-2-3"} {
		if err := DeleteSpam(t.Context(), rdb, q, bad); err == nil || errors.Is(err, ErrNotInFolder) {
			t.Errorf("delete %q: %v, want a bad ID", bad, err)
		}
		if err := ReleaseSpam(t.Context(), rdb, q, bad); err == nil || errors.Is(err, ErrNotInFolder) {
			t.Errorf("release %q: %v, want a bad ID", bad, err)
		}
	}
	if left, _, _ := ListSpam(t.Context(), rdb, q, "", 10); len(left) != 1 || left[0].ID == got[0].ID {
		t.Errorf("folder %+v, want the other entry only", left)
	}
	if n := rdb.XLen(t.Context(), q.Stream).Val(); n != 0 {
		t.Errorf("delete delivered %d", n)
	}
}

func TestSpam_ForgetErasesSpamToo(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	addFormSubmission(t, st, "demo", "gone@example.com", spamVerdict, "")
	addFormSubmission(t, st, "demo", "stays@example.com", spamVerdict, "")
	rec := AppendContactRecord(nil, ContactRecord{Name: "G", Email: "Gone@example.com", Topic: "general", Message: "spam spam spam", ReceivedAt: time.Now().UTC()})
	if _, err := st.AddContactJudged(t.Context(), netip.MustParseAddr("127.0.0.1"), 0, Idempotency{}, rec, spamVerdict, config.DurabilityProcess); err != nil {
		t.Fatal(err)
	}
	rep, err := Forget(t.Context(), rdb, "gone@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Spam != 2 {
		t.Errorf("report %+v, want 2 spam erased", rep)
	}
	if n := rdb.XLen(t.Context(), ContactSpam).Val(); n != 0 {
		t.Errorf("%d contact spam left", n)
	}
	left, _, _ := ListSpam(t.Context(), rdb, FormQueue("demo"), "", 10)
	if len(left) != 1 || !strings.Contains(string(left[0].Record), "stays@example.com") {
		t.Errorf("form spam left %+v, want the other address's", left)
	}
}

func TestSpam_RetentionTrimsTheFolder(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	q := FormQueue("demo")
	addFormSubmission(t, st, "demo", "old@example.com", spamVerdict, "")
	// A day later, with a retention of an hour: the spam is past it, and waits for no delivery.
	n, err := q.Trim(t.Context(), rdb, time.Hour, true, time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || rdb.XLen(t.Context(), q.Spam).Val() != 0 {
		t.Errorf("trimmed %d, folder holds %d; want the spam gone", n, rdb.XLen(t.Context(), q.Spam).Val())
	}
	addFormSubmission(t, st, "demo", "new@example.com", spamVerdict, "")
	if n, err := q.Trim(t.Context(), rdb, time.Hour, true, time.Now()); err != nil || n != 0 {
		t.Errorf("trimmed %d %v of spam inside the retention", n, err)
	}
}

func TestCountContent_CountsWithinTheWindow(t *testing.T) {
	_, srv := testStore(t)
	rdb := srv.Client()
	for want := 1; want <= 3; want++ {
		if n, err := CountContent(t.Context(), rdb, ContactQueue, "fp1"); err != nil || n != want {
			t.Fatalf("count %d %v, want %d", n, err, want)
		}
	}
	if n, _ := CountContent(t.Context(), rdb, FormQueue("demo"), "fp1"); n != 1 {
		t.Errorf("another form's count %d, want its own 1", n)
	}
	if n := testredis.EndLifetimes(t, rdb, "fs:{contact}:seen:*", SeenWindow); n != 1 {
		t.Fatalf("%d counters ended, want 1", n)
	}
	if n, _ := CountContent(t.Context(), rdb, ContactQueue, "fp1"); n != 1 {
		t.Errorf("after the window: %d, want 1", n)
	}
}

// A spam and a genuine submission stored together (one script call of the group commit, one
// millisecond) never share an ID: a released spam keeps its ID, and a receiver deduplicating by
// webhook-id would drop one of two messages with the same (D63).
func TestSpam_IDsNeverThoseOfGenuineSubmissions(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	q := FormQueue("demo")
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := Verdict{}
			if i%2 == 0 {
				v = spamVerdict
			}
			addFormSubmission(t, st, "demo", "sender"+strconv.Itoa(i)+"@example.com", v, "")
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, stream := range []string{q.Stream, q.Spam} {
		for _, m := range rdb.XRange(t.Context(), stream, "-", "+").Val() {
			if id := MessageID(m); seen[id] {
				t.Fatalf("two submissions have the ID %s", id)
			} else {
				seen[id] = true
			}
		}
	}
	if len(seen) != 200 {
		t.Fatalf("%d stored, want 200", len(seen))
	}
}

// A folder whose last ID is ahead of the delivery stream's (kept before spam IDs came from the stream's
// sequence) still takes spam: under its own next ID.
func TestSpam_FolderAheadTakesItsOwnNextID(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	q := FormQueue("demo")
	ahead := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10) + "-0"
	if err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: q.Spam, ID: ahead, Values: []any{"m", "{}"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if r := addFormSubmission(t, st, "demo", "spammer@example.com", spamVerdict, ""); r.Outcome != Stored {
		t.Fatalf("spam behind an ahead folder: %+v", r)
	}
	if n := rdb.XLen(t.Context(), q.Spam).Val(); n != 2 {
		t.Fatalf("%d in the folder, want 2", n)
	}
}
