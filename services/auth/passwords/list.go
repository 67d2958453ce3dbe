package passwords

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"sort"
	"strings"
	"sync"
)

// breachedGz is the list of passwords known from breaches that a new password could be: every entry of
// at least MinLen characters of a public list of the 1,000,000 most common passwords of a breach corpus,
// in lower case, sorted, one a line (gen.go makes it; its source and licence: D54 and
// breached.LICENSE). Shorter entries are left out: the length rule refuses them first.
//
//go:embed breached.txt.gz
var breachedGz []byte

// breachList is the list as one string and where each entry starts: decompressed once, at the first
// lookup (about 0.8 MB), so that a process that judges no password never pays for it.
type breachList struct {
	text   string
	starts []uint32
}

var loadList = sync.OnceValue(func() *breachList {
	zr, err := gzip.NewReader(bytes.NewReader(breachedGz))
	if err != nil {
		panic("passwords: the embedded list is unreadable: " + err.Error()) // a build defect; the tests read it
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		panic("passwords: the embedded list is unreadable: " + err.Error())
	}
	l := &breachList{text: string(b), starts: make([]uint32, 0, bytes.Count(b, []byte{'\n'}))}
	for i := 0; i < len(l.text); {
		l.starts = append(l.starts, uint32(i))
		i += strings.IndexByte(l.text[i:], '\n') + 1
	}
	return l
})

// entry is the i-th entry, without its newline.
func (l *breachList) entry(i int) string {
	s := l.text[l.starts[i]:]
	return s[:strings.IndexByte(s, '\n')]
}

// Len is the number of entries.
func (l *breachList) Len() int { return len(l.starts) }

// OnBreachList reports whether p, in lower case, is on the list: a binary search of the sorted entries.
func OnBreachList(p string) bool {
	l := loadList()
	p = strings.ToLower(p)
	i := sort.Search(l.Len(), func(i int) bool { return l.entry(i) >= p })
	return i < l.Len() && l.entry(i) == p
}
