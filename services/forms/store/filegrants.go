package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// A file grant lets one download of one stored file through the forms service's link route without a
// signature (D83): the admin API, which may not hold the link key, puts the file's object key under a
// random token for a few minutes; the forms service takes it out (GETDEL) when the link is followed. The
// token is kept only as its SHA-256, so a copy of the store (a backup, a replica) holds no usable link.
const fileGrantPrefix = "fs:files:grant:"

// FileGrantTTL is how long a grant waits to be followed: a console's download starts at once.
const FileGrantTTL = 5 * time.Minute

// ErrNoFileGrant: the token grants nothing (never made, followed already, expired, or of another file).
var ErrNoFileGrant = errors.New("no such file grant")

func fileGrantKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return fileGrantPrefix + hex.EncodeToString(sum[:])
}

// GrantFile stores a grant of the object key for ttl and returns its token (256 random bits, base64url).
func GrantFile(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (string, error) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	token := base64.RawURLEncoding.EncodeToString(b[:])
	if err := rdb.Set(ctx, fileGrantKey(token), key, ttl).Err(); err != nil {
		return "", err
	}
	return token, nil
}

// TakeFileGrant uses up the grant of token and returns the object key it grants; ErrNoFileGrant when
// there is none. A token of the wrong shape is refused without a round trip.
func TakeFileGrant(ctx context.Context, rdb redis.UniversalClient, token string) (string, error) {
	if b, err := base64.RawURLEncoding.DecodeString(token); err != nil || len(b) != 32 {
		return "", ErrNoFileGrant
	}
	key, err := rdb.GetDel(ctx, fileGrantKey(token)).Result()
	if errors.Is(err, redis.Nil) {
		return "", ErrNoFileGrant
	}
	return key, err
}
