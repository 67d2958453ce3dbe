package render

import "testing"

// An image's data format is known by the default image's digest (also under a mirror's name), or by a
// redis or valkey repository with a major.minor tag; anything else is unknown, and so never shown to
// read a recorded format.
func TestImageRDBFormat(t *testing.T) {
	const unknown = -1
	for _, c := range []struct {
		image  string
		writes int // unknown: the operator does not know the image
		reads  map[int]bool
	}{
		{DefaultRedisImage, 11, map[int]bool{9: true, 11: true, 12: false, 80: false}},
		{"mirror.example/library/store@" + DefaultRedisImage[len("docker.io/valkey/valkey:8.1.10-alpine@"):], 11, map[int]bool{11: true, 12: false}},
		{LegacyRedisImage, 12, map[int]bool{11: true, 12: true, 13: false, 80: false}},
		{"mirror.example/valkey/valkey:8.1.10-alpine", 11, map[int]bool{11: true, 12: false}},
		{"registry.internal:5000/valkey:7.2.5", 11, map[int]bool{11: true, 12: false}},
		{"valkey/valkey:9.0.0", 80, map[int]bool{11: true, 12: false, 79: false, 80: true}},
		{"redis:7.2-alpine", 11, map[int]bool{11: true, 12: false}},
		{"redis:7.0.15", 10, map[int]bool{10: true, 11: false}},
		{"bitnami/redis:6.2.14-debian-12-r0", 9, map[int]bool{9: true, 10: false}},
		{"redis:7-alpine", unknown, nil},
		{"redis:latest", unknown, nil},
		{"redis:8.0.2", unknown, nil},
		{"mirror.example/redis@sha256:bb", unknown, nil},
		{"mirror.example/store:8.1.10", unknown, nil},
		{"registry.internal:5000/valkey", unknown, nil},
	} {
		f, ok := ImageRDBFormat(c.image)
		if c.writes == unknown {
			if ok {
				t.Errorf("%s: known as writing %d, want unknown", c.image, f.Writes)
			}
			continue
		}
		if !ok || f.Writes != c.writes {
			t.Errorf("%s: writes %d (known %v), want %d", c.image, f.Writes, ok, c.writes)
			continue
		}
		for v, want := range c.reads {
			if got := f.Reads(v); got != want {
				t.Errorf("%s reads RDB %d: %v, want %v", c.image, v, got, want)
			}
		}
	}
}
