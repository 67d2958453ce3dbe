// Command helmdocs writes the table of a chart's values, from the `# --` comments of its values.yaml,
// into Markdown files between the markers
//
//	<!-- values-table:start -->
//	<!-- values-table:end -->
//
// (helm-docs' comment convention, without its dependencies). Every value needs a description: a key
// with a `# --` comment is one row, with its whole value as the default; an undocumented map is
// descended into; an undocumented scalar or list is an error, so the table can never silently miss one.
//
//	helmdocs -values charts/x/values.yaml README.md charts/x/README.md          rewrite the tables
//	helmdocs -values charts/x/values.yaml -check README.md charts/x/README.md   fail when one is stale
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

const (
	startMarker = "<!-- values-table:start -->"
	endMarker   = "<!-- values-table:end -->"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "helmdocs:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("helmdocs", flag.ContinueOnError)
	valuesPath := fs.String("values", "", "the chart's values.yaml")
	check := fs.Bool("check", false, "change nothing; fail when a file's table is not current")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *valuesPath == "" || fs.NArg() == 0 {
		return errors.New("usage: helmdocs -values values.yaml [-check] FILE.md [FILE.md ...]")
	}
	src, err := os.ReadFile(*valuesPath)
	if err != nil {
		return err
	}
	rows, err := parseValues(src)
	if err != nil {
		return fmt.Errorf("%s: %w", *valuesPath, err)
	}
	table := renderTable(rows)
	var stale []string
	for _, path := range fs.Args() {
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		updated, err := replaceTable(doc, table)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if bytes.Equal(doc, updated) {
			continue
		}
		if *check {
			stale = append(stale, path)
			continue
		}
		if err := os.WriteFile(path, updated, 0o644); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("the values table is stale in %s: run `make helm-docs`", strings.Join(stale, ", "))
	}
	return nil
}

// row is one documented value.
type row struct {
	Key, Type, Default, Description string
}

func parseValues(src []byte) ([]row, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml is not a mapping")
	}
	var rows []row
	if err := walk(doc.Content[0], "", &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

func walk(m *yaml.Node, prefix string, rows *[]row) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, value := m.Content[i], m.Content[i+1]
		path := prefix + key.Value
		if desc, ok := description(key.HeadComment); ok {
			r, err := newRow(path, desc, value)
			if err != nil {
				return err
			}
			*rows = append(*rows, r)
			continue
		}
		if value.Kind == yaml.MappingNode && len(value.Content) > 0 {
			if err := walk(value, path+".", rows); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("line %d: %s has no `# --` description", key.Line, path)
	}
	return nil
}

// description returns the text of the comment block that starts with "# --": its first line after the
// marker and every comment line after it, joined.
func description(comment string) (string, bool) {
	var parts []string
	found := false
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(line)
		if text, ok := strings.CutPrefix(line, "# --"); ok && !found {
			found = true
			parts = append(parts, strings.TrimSpace(text))
			continue
		}
		if found {
			parts = append(parts, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		}
	}
	return strings.Join(parts, " "), found
}

func newRow(path, desc string, value *yaml.Node) (row, error) {
	var v any
	if err := value.Decode(&v); err != nil {
		return row{}, fmt.Errorf("%s: %w", path, err)
	}
	typ := "string"
	switch v.(type) {
	case bool:
		typ = "bool"
	case int, int64, uint64:
		typ = "int"
	case float64:
		typ = "float"
	case map[string]any:
		typ = "object"
	case []any:
		typ = "list"
	case nil:
		typ = "object"
	}
	def, err := json.Marshal(v)
	if err != nil {
		return row{}, fmt.Errorf("%s: %w", path, err)
	}
	return row{Key: path, Type: typ, Default: string(def), Description: desc}, nil
}

func renderTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", r.Key, r.Type, escape(r.Default), escape(r.Description))
	}
	return b.String()
}

// escape keeps a cell inside its column, and angle brackets outside code spans visible (Markdown would
// take <release> for an HTML tag).
func escape(s string) string {
	parts := strings.Split(strings.ReplaceAll(s, "|", `\|`), "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

func replaceTable(doc []byte, table string) ([]byte, error) {
	s := string(doc)
	start := strings.Index(s, startMarker)
	end := strings.Index(s, endMarker)
	if start < 0 || end < start {
		return nil, fmt.Errorf("no %s ... %s markers", startMarker, endMarker)
	}
	return []byte(s[:start+len(startMarker)] + "\n" + table + s[end:]), nil
}
