package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/redis/go-redis/v9"
)

// What back-channel logout needs of grants: which client holds each family, and the user's families with
// the sign-in session each started in, read before they are revoked.

// FamilyClients names the client of each family from its current tokens or code (one pipeline of
// ownerScript); a family none of whose records is left is not in the answer.
func (s *Store) FamilyClients(ctx context.Context, families []string) (map[string]string, error) {
	out := make(map[string]string, len(families))
	var valid []string
	for _, f := range families {
		if validFamily(f) {
			valid = append(valid, f)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	cmds := make([]*redis.Cmd, len(valid))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, f := range valid {
			cmds[i] = ownerScript.Eval(ctx, p, []string{currentKey(f, "rt"), currentKey(f, "at"), currentKey(f, "code")})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	for i, f := range valid {
		v, err := cmds[i].Text()
		if err != nil || len(v) <= len(active) {
			continue
		}
		var rec struct {
			ClientID string `json:"client"`
		}
		if json.Unmarshal([]byte(v[len(active):]), &rec) == nil && rec.ClientID != "" {
			out[f] = rec.ClientID
		}
	}
	return out, nil
}

// SubjectSessions lists the families of the user's index (and of the index of an earlier version),
// each with the sign-in session it started in ("" when the index does not know it): what a sign-out
// everywhere is about to revoke.
func (s *Store) SubjectSessions(ctx context.Context, subject string) (map[string]string, error) {
	var indexed *redis.StringSliceCmd
	var sessions *redis.MapStringStringCmd
	var legacy *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		indexed = p.ZRange(ctx, subjectKey(subject), 0, -1)
		sessions = p.HGetAll(ctx, sessionsKey(subject))
		legacy = p.SMembers(ctx, legacySubjectKey(subject))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "WRONGTYPE") {
		return nil, unavailable(err)
	}
	out := map[string]string{}
	for _, f := range append(indexed.Val(), legacy.Val()...) {
		out[f] = sessions.Val()[f]
	}
	return out, nil
}
