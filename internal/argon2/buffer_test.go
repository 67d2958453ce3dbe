package argon2

import (
	"bytes"
	"fmt"
	"testing"

	xargon2 "golang.org/x/crypto/argon2"
)

// TestIDKeyInto_SameKeysAsTheOriginalPackage checks the copy's one change against the package it was
// copied from: one Buffer, reused dirty across costs that grow and shrink, several lanes and passes,
// gives exactly golang.org/x/crypto/argon2's keys, with SSE4.1 and without.
func TestIDKeyInto_SameKeysAsTheOriginalPackage(t *testing.T) {
	defer func(sse4 bool) { useSSE4 = sse4 }(useSSE4)
	cases := []struct {
		time, memory uint32
		threads      uint8
		keyLen       uint32
	}{
		{2, 1024, 1, 32}, {1, 64, 1, 32}, {3, 4096, 1, 16}, {2, 2048, 4, 64}, {1, 8, 1, 32},
		{4, 512, 2, 32}, {2, 19456, 1, 32}, {1, 300, 3, 24}, {2, 1024, 1, 32},
	}
	for _, sse4 := range []bool{true, false} {
		if sse4 && !useSSE4 {
			continue
		}
		useSSE4 = sse4
		var buf Buffer
		for i, c := range cases {
			password := []byte(fmt.Sprintf("password %d", i))
			salt := []byte(fmt.Sprintf("salt of case %d", i))
			want := xargon2.IDKey(password, salt, c.time, c.memory, c.threads, c.keyLen)
			if got := IDKeyInto(&buf, password, salt, c.time, c.memory, c.threads, c.keyLen); !bytes.Equal(got, want) {
				t.Errorf("sse4=%v case %d %+v: IDKeyInto %x, x/crypto %x", sse4, i, c, got, want)
			}
			if got := IDKey(password, salt, c.time, c.memory, c.threads, c.keyLen); !bytes.Equal(got, want) {
				t.Errorf("sse4=%v case %d %+v: IDKey %x, x/crypto %x", sse4, i, c, got, want)
			}
		}
		if buf.Len() < 19456 {
			t.Errorf("the Buffer holds %d KiB, want the largest cost it served (19456)", buf.Len())
		}
	}
}

// TestIDKeyInto_DoesNotAllocateItsMemoryAgain is the copy's reason to exist: with a Buffer, a hash
// allocates a few small things (blake2b states, the key), not its memory cost (1 MiB here).
func TestIDKeyInto_DoesNotAllocateItsMemoryAgain(t *testing.T) {
	var buf Buffer
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			IDKeyInto(&buf, []byte("p"), []byte("saltsaltsalt"), 1, 1024, 1, 32)
		}
	})
	if perOp := res.AllocedBytesPerOp(); perOp > 64<<10 {
		t.Errorf("IDKeyInto with a Buffer allocated %d bytes per hash, want well under its 1 MiB", perOp)
	}
}
