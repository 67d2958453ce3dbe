package render

import (
	"regexp"
	"strconv"
	"strings"
)

// The data format of the managed store (docs/decisions D53). Redis and Valkey write their snapshots, and
// the base of the append-only file, in an RDB format whose version goes up with the server's, and a
// server refuses a file of a version it does not know ("Can't handle RDB format version 12"): a store
// switched to an image that cannot read its files crash-loops with the data on its volume. The operator
// cannot ask the files (it does not talk to the store, nor mount its volume), so it knows an image's
// format from the image's name, and records on the store's claim the highest format an image it ran there
// writes (RedisFormatAnnotation).

// Annotations on the managed Redis's PersistentVolumeClaims.
const (
	// RedisFormatAnnotation is the highest RDB format version an image the operator ran on the claim
	// writes: no image that cannot read it is applied to the store again.
	RedisFormatAnnotation = "platform.formsservice.io/redis-rdb-format"
	// RedisFormatWriterAnnotation names the image that raised RedisFormatAnnotation last, for people.
	RedisFormatWriterAnnotation = "platform.formsservice.io/redis-rdb-format-written-by"
)

// RDBFormat is what the operator knows of an image's data format: the RDB version it writes and a test of
// the versions it reads.
type RDBFormat struct {
	// Writes is the RDB version the server writes.
	Writes int
	reads  func(version int) bool
}

// Reads reports whether the server loads files of the given RDB version.
func (f RDBFormat) Reads(version int) bool { return f.reads(version) }

// rdbUpTo is a server that reads every version up to its own, as Redis and Valkey up to 8 do.
func rdbUpTo(v int) RDBFormat {
	return RDBFormat{Writes: v, reads: func(version int) bool { return version <= v }}
}

// valkeyFrom9 is Valkey from 9.0: it writes RDB 80 and keeps the versions 12 to 79, those of Redis 7.4
// and later, out (it refuses them unless told to try).
func valkeyFrom9() RDBFormat {
	return RDBFormat{Writes: 80, reads: func(version int) bool { return version <= 11 || version == 80 }}
}

// imageVersionRe takes the major and minor version at the start of an image tag (8.1.10-alpine, 7.4,
// 7.2.5-debian-12-r0).
var imageVersionRe = regexp.MustCompile(`^v?([0-9]+)\.([0-9]+)`)

// ImageRDBFormat is the data format of a Redis or Valkey image, known by its digest (the images the
// operator names, and a mirror's copy of them, which keeps the digest) or by its repository's last path
// element (redis, valkey) and a tag that starts with major.minor. ok is false for any other image: a tag
// such as latest or 7-alpine, a name of the mirror's own, a digest alone.
func ImageRDBFormat(image string) (RDBFormat, bool) {
	name, digest, _ := strings.Cut(image, "@")
	if digest != "" {
		if _, known, _ := strings.Cut(DefaultRedisImage, "@"); digest == known {
			return rdbUpTo(11), true
		}
	}
	repo, tag := name, ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		repo, tag = name[:i], name[i+1:]
	}
	m := imageVersionRe.FindStringSubmatch(tag)
	if m == nil {
		return RDBFormat{}, false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	switch repo[strings.LastIndex(repo, "/")+1:] {
	case "valkey":
		switch {
		case major == 7 && minor >= 2, major == 8:
			return rdbUpTo(11), true
		case major == 9:
			return valkeyFrom9(), true
		}
	case "redis":
		switch {
		case major == 6:
			return rdbUpTo(9), true
		case major == 7 && minor < 2:
			return rdbUpTo(10), true
		case major == 7 && minor < 4:
			return rdbUpTo(11), true
		case major == 7 && minor == 4:
			return rdbUpTo(12), true
		}
	}
	return RDBFormat{}, false
}
