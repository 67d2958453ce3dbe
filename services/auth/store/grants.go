package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"
	"github.com/redis/go-redis/v9"
)

// This file is what the account page needs of grants: the user's live grants with their client and
// last use, and ending one of them.

// Grant is one live grant (token family) of a user.
type Grant struct {
	Family   string
	ClientID string
	Scopes   []string
	// AuthTime is the sign-in that started the grant; LastUsed when its current tokens were issued (the
	// code exchange or the latest refresh).
	AuthTime time.Time
	LastUsed time.Time
	// Offline is true when the grant holds a refresh token (it lasts beyond its access token).
	Offline bool
}

// grantScript reads a family's current refresh or access token record (the first still a record) and
// whether the family is revoked. KEYS: rt, at, revoked. Reply: {record or ”, revoked, kind}.
var grantScript = redis.NewScript(`
local revoked = redis.call('EXISTS', KEYS[3])
for i = 1, 2 do
  local v = redis.call('GET', KEYS[i])
  if v then
    local nl = string.find(v, '\n', 1, true)
    if nl and string.sub(v, nl + 1, nl + 1) == 'A' then return {string.sub(v, nl + 1), revoked, i} end
  end
end
return {'', revoked, 0}
`)

// Grants lists the user's live grants, the most recently used first: those not revoked with an access
// or refresh token that has not expired. One round trip for the index, one pipeline of one script per
// grant (at most MaxFamilies).
func (s *Store) Grants(ctx context.Context, subject string) ([]Grant, error) {
	families, err := s.rdb.ZRangeByScore(ctx, subjectKey(subject), &redis.ZRangeBy{Min: strconv.FormatInt(time.Now().UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	cmds := make([]*redis.Cmd, 0, len(families))
	run := func() error {
		cmds = cmds[:0]
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, f := range families {
				cmds = append(cmds, grantScript.EvalSha(ctx, p, []string{currentKey(f, "rt"), currentKey(f, "at"), revokedKey(f)}))
			}
			return nil
		})
		return err
	}
	if err := run(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = grantScript.Load(ctx, s.rdb).Err(); err == nil {
			err = run()
		}
		if err != nil {
			return nil, unavailable(err)
		}
	} else if err != nil {
		return nil, unavailable(err)
	}
	now := time.Now()
	var out []Grant
	for i, f := range families {
		res, err := cmds[i].Slice()
		if err != nil || len(res) != 3 {
			continue
		}
		rec, _ := res[0].(string)
		revoked, _ := res[1].(int64)
		kind, _ := res[2].(int64)
		if rec == "" || revoked == 1 {
			continue
		}
		sr := storedRequest{Session: s.newSession()}
		if json.Unmarshal([]byte(rec[len(active):]), &sr) != nil {
			continue
		}
		tt := fosite.AccessToken
		if kind == 1 {
			tt = fosite.RefreshToken
		}
		if exp := sr.Session.GetExpiresAt(tt); !exp.IsZero() && exp.Before(now) {
			continue
		}
		g := Grant{Family: f, ClientID: sr.ClientID, Scopes: sr.GrantedScope, LastUsed: sr.RequestedAt.UTC(), Offline: kind == 1}
		if os, ok := sr.Session.(openid.Session); ok {
			g.AuthTime = os.IDTokenClaims().AuthTime
		}
		out = append(out, g)
	}
	slices.SortStableFunc(out, func(a, b Grant) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

// ErrNotTheUsers is a grant that is not among the user's.
var ErrNotTheUsers = errors.New("no such grant of this user")

// EndGrant revokes one grant of the user (every token of it stops working) and takes it off the user's
// index. A family that is not the user's is ErrNotTheUsers, and nothing is revoked.
func (s *Store) EndGrant(ctx context.Context, subject, family string) error {
	if !validFamily(family) {
		return ErrNotTheUsers
	}
	if _, err := s.rdb.ZScore(ctx, subjectKey(subject), family).Result(); errors.Is(err, redis.Nil) {
		return ErrNotTheUsers
	} else if err != nil {
		return unavailable(err)
	}
	if err := s.RevokeFamily(ctx, family); err != nil {
		return err
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, subjectKey(subject), family)
		p.HDel(ctx, sessionsKey(subject), family)
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}
