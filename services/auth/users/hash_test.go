package users_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"

	"github.com/formsservice/formsservice/services/auth/users"
)

// TestHasher_StandardArgon2idWithItsOwnMemory: the pool hashes in memory it keeps from hash to hash
// (internal/argon2); the hashes it writes are the standard algorithm's (checked with x/crypto), and it
// verifies hashes of a higher and of a lower cost than its own, one after another, in any order.
func TestHasher_StandardArgon2idWithItsOwnMemory(t *testing.T) {
	ctx := context.Background()
	own := users.Params{MemoryKiB: 256, Iterations: 2, Parallelism: 1}
	h := users.NewHasher(own, 1)
	others := map[string]users.Params{
		"lower":  {MemoryKiB: 64, Iterations: 1, Parallelism: 1},
		"higher": {MemoryKiB: 1024, Iterations: 1, Parallelism: 2},
	}
	stored := map[string]string{}
	for name, p := range others {
		enc, err := users.NewHasher(p, 1).Hash(ctx, "password "+name)
		if err != nil {
			t.Fatal(err)
		}
		stored[name] = enc
	}
	enc, err := h.Hash(ctx, "password own")
	if err != nil {
		t.Fatal(err)
	}
	stored["own"] = enc
	for _, name := range []string{"own", "higher", "lower", "own", "lower", "higher"} {
		ok, rehash, err := h.Verify(ctx, stored[name], "password "+name)
		if !ok || err != nil || rehash != (name != "own") {
			t.Errorf("%s: verify = %v, rehash %v, %v", name, ok, rehash, err)
		}
		if ok, _, _ := h.Verify(ctx, stored[name], "password "+name+"!"); ok {
			t.Errorf("%s: a wrong password verified", name)
		}
		if !standardArgon2id(t, stored[name], "password "+name) {
			t.Errorf("%s: %s is not the standard argon2id of its password", name, stored[name])
		}
	}
}

// standardArgon2id recomputes a PHC string's key with golang.org/x/crypto/argon2.
func standardArgon2id(t *testing.T, enc, password string) bool {
	parts := strings.Split(enc, "$")
	var m, it uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &it, &p); err != nil {
		t.Fatalf("%s: %v", enc, err)
	}
	salt, _ := base64.RawStdEncoding.DecodeString(parts[4])
	key, _ := base64.RawStdEncoding.DecodeString(parts[5])
	return bytes.Equal(argon2.IDKey([]byte(password), salt, it, m, p, uint32(len(key))), key)
}
