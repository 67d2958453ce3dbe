package users

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Search is the admin API's listing of accounts (docs/architecture.md D59): the accounts whose address
// contains q (any case; "" for all), in the order of their addresses, at most limit of them after the
// address after (exclusive; "" from the first). more says whether further accounts follow the last one
// returned, whose address is the next page's after.
//
// The addresses are found by a SCAN of the address index's keys, matched by Redis (MATCH), on every
// master: no index of its own to keep in step, at the cost of a walk of the keyspace per page. That is
// fine for the thousands of accounts an operator pages through; a sorted index is the step when it is not.
func (s *Store) Search(ctx context.Context, q, after string, limit int) (found []*User, more bool, err error) {
	emails, err := s.scanEmails(ctx, strings.ToLower(q))
	if err != nil {
		return nil, false, err
	}
	slices.Sort(emails)
	emails = slices.Compact(emails)
	start, _ := slices.BinarySearch(emails, after)
	if start < len(emails) && emails[start] == after {
		start++
	}
	rest := emails[start:]
	for len(rest) > 0 && len(found) < limit {
		chunk := rest[:min(len(rest), limit-len(found))]
		rest = rest[len(chunk):]
		us, err := s.byEmails(ctx, chunk)
		if err != nil {
			return nil, false, err
		}
		found = append(found, us...)
	}
	return found, len(rest) > 0, nil
}

// byEmails reads the accounts of addresses in two round trips (the index, then the records), leaving
// out an address whose index or record is gone or half made (as List does).
func (s *Store) byEmails(ctx context.Context, emails []string) ([]*User, error) {
	ids := make([]*redis.StringCmd, len(emails))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range emails {
			ids[i] = p.Get(ctx, emailKey(e))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	reads := make([]func() (*User, error), len(emails))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, cmd := range ids {
			reads[i] = s.QueueByID(ctx, p, cmd.Val())
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	out := make([]*User, 0, len(emails))
	for i, read := range reads {
		u, err := read()
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return nil, err
		case u.Email == emails[i]:
			out = append(out, u)
		}
	}
	return out, nil
}

// scanEmails lists the addresses of the index that contain q, from every master.
func (s *Store) scanEmails(ctx context.Context, q string) ([]string, error) {
	const prefix, suffix = "auth:email:{", "}"
	match := prefix + "*" + globEscape(q) + "*" + suffix
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, match, 500).Iterator()
		for iter.Next(ctx) {
			e := strings.TrimSuffix(strings.TrimPrefix(iter.Val(), prefix), suffix)
			mu.Lock()
			out = append(out, e)
			mu.Unlock()
		}
		if err := iter.Err(); err != nil {
			return unavailable(err)
		}
		return nil
	}
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx, scan); err != nil {
			return nil, err
		}
	case *redis.Client:
		if err := scan(ctx, c); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("users: searching needs a single-server or cluster client")
	}
	return out, nil
}

// globEscape makes s match itself in a Redis MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
