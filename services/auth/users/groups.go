package users

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Groups (docs/auth.md "Groups", docs/architecture.md D37): the names a user belongs to, for relying
// parties' role bindings (Kubernetes RBAC subjects, Grafana teams, oauth2-proxy --allowed-group). They
// are a field of the user's own hash (one key, so one Cluster slot, and read with the user at no extra
// round trip), kept sorted and without duplicates, space-separated: a group name has no space.

// Group bounds. A name is what RBAC bindings and proxies compare byte for byte, so it is case-sensitive
// and from a charset every consumer takes as it is (system:masters, org/team, team.ops, a@b); the bounds
// keep the ID token that carries them small (at most 32 × 64 bytes).
const (
	MaxGroupLen = 64
	MaxGroups   = 32
)

// Group errors; each says what was wrong with the name it wraps.
var (
	ErrInvalidGroup  = errors.New("invalid group name")
	ErrTooManyGroups = fmt.Errorf("a user belongs to at most %d groups", MaxGroups)
)

// CheckGroup says whether name is a valid group name: 1 to MaxGroupLen bytes of ASCII letters, digits
// and . _ - : / @ +, starting with a letter or digit.
func CheckGroup(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidGroup)
	}
	if len(name) > MaxGroupLen {
		return fmt.Errorf("%w %q: at most %d characters", ErrInvalidGroup, name, MaxGroupLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letterOrDigit := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !letterOrDigit {
			return fmt.Errorf("%w %q: must start with a letter or digit", ErrInvalidGroup, name)
		}
		if !letterOrDigit && !strings.ContainsRune("._-:/@+", rune(c)) {
			return fmt.Errorf("%w %q: only letters, digits and . _ - : / @ + (no spaces)", ErrInvalidGroup, name)
		}
	}
	return nil
}

func parseGroups(field string) []string { return strings.Fields(field) }

// groupsScript adds (ARGV[1] = add) or removes (remove) the groups ARGV[3:] of the user KEYS[1], or
// makes them its groups (set: the names it changed marked + or -, which no group name starts with), and
// keeps the field sorted; ARGV[2] is the bound. It answers {n, the n groups after..., the names it
// changed...}, or {-1} when the user is gone, {-2} when an addition would pass the bound (nothing
// written). One script, so two operators editing one user's groups at once lose nothing.
var groupsScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'id') == false then return {-1} end
local cur = redis.call('HGET', KEYS[1], 'groups') or ''
local set, list, changed = {}, {}, {}
for g in string.gmatch(cur, '%S+') do
  if not set[g] then set[g] = true; table.insert(list, g) end
end
if ARGV[1] == 'add' then
  for i = 3, #ARGV do
    if not set[ARGV[i]] then set[ARGV[i]] = true; table.insert(list, ARGV[i]); table.insert(changed, ARGV[i]) end
  end
  if #list > tonumber(ARGV[2]) then return {-2} end
elseif ARGV[1] == 'set' then
  local want, kept = {}, {}
  for i = 3, #ARGV do want[ARGV[i]] = true end
  for _, g in ipairs(list) do
    if want[g] then table.insert(kept, g) else table.insert(changed, '-' .. g) end
  end
  for i = 3, #ARGV do
    if not set[ARGV[i]] then set[ARGV[i]] = true; table.insert(kept, ARGV[i]); table.insert(changed, '+' .. ARGV[i]) end
  end
  list = kept
else
  local drop = {}
  for i = 3, #ARGV do if set[ARGV[i]] then drop[ARGV[i]] = true end end
  local kept = {}
  for _, g in ipairs(list) do
    if drop[g] then table.insert(changed, g) else table.insert(kept, g) end
  end
  list = kept
end
table.sort(list)
if #changed > 0 then
  if #list == 0 then redis.call('HDEL', KEYS[1], 'groups') else redis.call('HSET', KEYS[1], 'groups', table.concat(list, ' ')) end
end
local out = {#list}
for _, g in ipairs(list) do table.insert(out, g) end
for _, g in ipairs(changed) do table.insert(out, g) end
return out
`)

// AddGroups makes the user with address email a member of groups (those it is in already are left as
// they are). It returns the user with its groups after the change and the groups added.
func (s *Store) AddGroups(ctx context.Context, email string, groups []string) (*User, []string, error) {
	return s.editGroups(ctx, email, "add", groups)
}

// RemoveGroups takes the user with address email out of groups (names it is not in are ignored). It
// returns the user with its groups after the change and the groups removed.
func (s *Store) RemoveGroups(ctx context.Context, email string, groups []string) (*User, []string, error) {
	return s.editGroups(ctx, email, "remove", groups)
}

func (s *Store) editGroups(ctx context.Context, email, op string, groups []string) (*User, []string, error) {
	if len(groups) == 0 {
		return nil, nil, fmt.Errorf("%w: no group named", ErrInvalidGroup)
	}
	if op == "add" && len(groups) > MaxGroups {
		return nil, nil, ErrTooManyGroups
	}
	for _, g := range groups {
		if err := CheckGroup(g); err != nil {
			return nil, nil, err
		}
	}
	u, err := s.ByEmail(ctx, email)
	if err != nil {
		return nil, nil, err
	}
	return s.runGroups(ctx, u, append([]any{op, MaxGroups}, toAny(groups)...))
}

// runGroups runs groupsScript on u with args and reads its answer.
func (s *Store) runGroups(ctx context.Context, u *User, args []any) (*User, []string, error) {
	res, err := groupsScript.Run(ctx, s.rdb, []string{userKey(u.ID)}, args...).Slice()
	if err != nil {
		return nil, nil, unavailable(err)
	}
	n, _ := res[0].(int64)
	switch {
	case n == -1:
		return nil, nil, ErrNotFound
	case n == -2:
		return nil, nil, fmt.Errorf("%w; %s is in %d (remove some first)", ErrTooManyGroups, u.Email, len(u.Groups))
	case n < 0 || int(n) >= len(res):
		return nil, nil, unavailable(fmt.Errorf("groups script answered %v", res))
	}
	strs := make([]string, 0, len(res)-1)
	for _, g := range res[1:] {
		if s, ok := g.(string); ok {
			strs = append(strs, s)
		}
	}
	u.Groups = strs[:n:n]
	return u, strs[n:], nil
}

// SetGroups makes groups the groups of the user with address email (an empty list: none; duplicates
// count once), in one step. It returns the user with its groups after the change and the groups it was
// added to and taken out of.
func (s *Store) SetGroups(ctx context.Context, email string, groups []string) (u *User, added, removed []string, err error) {
	groups = slices.Compact(slices.Sorted(slices.Values(groups)))
	if len(groups) > MaxGroups {
		return nil, nil, nil, ErrTooManyGroups
	}
	for _, g := range groups {
		if err := CheckGroup(g); err != nil {
			return nil, nil, nil, err
		}
	}
	u, err = s.ByEmail(ctx, email)
	if err != nil {
		return nil, nil, nil, err
	}
	args := append([]any{"set", MaxGroups}, toAny(groups)...)
	u, changed, err := s.runGroups(ctx, u, args)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range changed {
		if g, ok := strings.CutPrefix(c, "+"); ok {
			added = append(added, g)
		} else {
			removed = append(removed, strings.TrimPrefix(c, "-"))
		}
	}
	return u, added, removed, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
