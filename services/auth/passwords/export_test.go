package passwords

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckList checks the embedded list's shape: what the binary search and the length rule assume.
func CheckList() (int, error) {
	l := loadList()
	prev := ""
	for i := range l.Len() {
		e := l.entry(i)
		switch {
		case i > 0 && e <= prev:
			return 0, fmt.Errorf("entry %d %q is not after %q", i, e, prev)
		case utf8.RuneCountInString(e) < MinLen:
			return 0, fmt.Errorf("entry %d %q is shorter than %d", i, e, MinLen)
		case strings.ToLower(e) != e:
			return 0, fmt.Errorf("entry %d %q is not in lower case", i, e)
		}
		prev = e
	}
	return l.Len(), nil
}
