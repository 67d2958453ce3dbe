package audit

import (
	"context"
	"crypto/hmac"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Verification is what Verify found in the security stream.
type Verification struct {
	Entries  int    // entries read
	Chained  int    // of them, entries with a chain link
	First    string // the first chained entry's ID ("" for none): the chain is checked from there
	Last     string // the last entry's ID
	BreakAt  string // the ID of the first entry where the chain breaks ("" when it holds)
	BreakWhy string // why it breaks there
}

// Intact reports whether the chain holds from its first entry to the last.
func (v Verification) Intact() bool { return v.BreakAt == "" }

// Verify reads the security stream oldest first and checks its chain with keys: every chained entry's
// MAC is the HMAC of its predecessor's MAC and its event, and its predecessor's MAC is the one the
// entry before it carries. An edited entry, one deleted or inserted inside the stream, or an entry
// without a link after the chain began, breaks it. The oldest entry's predecessor is taken as it says
// (trimming removes entries from the old end); removing the newest entries leaves no trace (an
// external sink keeps those, docs/auth.md).
func (s *Store) Verify(ctx context.Context, keys ChainKeys) (Verification, error) {
	var v Verification
	all := append([][]byte{keys.Current}, keys.Others...)
	prevMAC := ""
	chained := false
	start := "-"
	for {
		msgs, err := s.rdb.XRangeN(ctx, StreamKey, start, "+", queryPage).Result()
		if err != nil {
			return v, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		for _, m := range msgs {
			v.Entries++
			v.Last = m.ID
			if v.BreakAt != "" {
				continue
			}
			if why := v.check(m, all, &prevMAC, &chained); why != "" {
				v.BreakAt, v.BreakWhy = m.ID, why
			}
		}
		if len(msgs) < queryPage {
			return v, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// check checks one entry against the chain so far; it answers why the chain breaks there ("" when it
// holds).
func (v *Verification) check(m redis.XMessage, keys [][]byte, prevMAC *string, chained *bool) string {
	e, _ := m.Values["e"].(string)
	p, hasP := m.Values["p"].(string)
	h, hasH := m.Values["h"].(string)
	if !hasP || !hasH {
		if *chained {
			return "an entry without a chain link after the chain began (inserted)"
		}
		return "" // written before the chain began
	}
	if *chained && p != *prevMAC {
		return "its predecessor is not the entry before it (an entry was deleted or inserted)"
	}
	if !*chained {
		*chained = true
		v.First = m.ID
	}
	v.Chained++
	*prevMAC = h
	for _, k := range keys {
		if hmac.Equal([]byte(h), []byte(chainMAC(k, p, e))) {
			return ""
		}
	}
	return "its MAC does not match its content (the entry was edited, or signed under a key since retired)"
}
