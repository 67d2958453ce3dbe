package docs_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/formsservice/formsservice/test/internal/repo"
)

// The admin API's reference, docs/admin-api.md, is generated from its OpenAPI document
// (services/auth/admin/openapi.yaml, which every answer of the API's tests is validated against), so the
// two cannot drift apart: TestAdminAPIReference_IsGenerated fails when the page is not what the
// document makes, and `make admin-api-reference` (this test with -update) writes it.

var update = flag.Bool("update", false, "rewrite docs/admin-api.md from the OpenAPI document")

const referencePage = "docs/admin-api.md"

func TestAdminAPIReference_IsGenerated(t *testing.T) {
	root := repo.Root(t)
	src, err := os.ReadFile(filepath.Join(root, "services/auth/admin/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	got := reference(t, doc.Content[0])
	path := filepath.Join(root, referencePage)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(want, got) {
		t.Fatalf("%s is not what services/auth/admin/openapi.yaml makes (%v): run 'make admin-api-reference' and commit it", referencePage, err)
	}
	// A route the document lists is on the page, with its scope.
	if !bytes.Contains(got, []byte("### `GET /admin/v1/users/{id}/factors`")) || !bytes.Contains(got, []byte("Scope: `users:read`")) {
		t.Fatalf("the page lacks a route of the document:\n%.2000s", got)
	}
}

// node reads the YAML document: a mapping's value by key, a sequence's items, a scalar's text.
type node struct{ n *yaml.Node }

func (n node) get(key string) node {
	if n.n == nil || n.n.Kind != yaml.MappingNode {
		return node{}
	}
	for i := 0; i+1 < len(n.n.Content); i += 2 {
		if n.n.Content[i].Value == key {
			return node{n.n.Content[i+1]}
		}
	}
	return node{}
}

func (n node) ok() bool    { return n.n != nil }
func (n node) str() string { return strings.TrimSpace(valueOf(n.n)) }

func valueOf(y *yaml.Node) string {
	if y == nil {
		return ""
	}
	return y.Value
}

// pairs are a mapping's keys and values, in the document's order.
func (n node) pairs() (keys []string, values []node) {
	if n.n == nil || n.n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.n.Content); i += 2 {
		keys = append(keys, n.n.Content[i].Value)
		values = append(values, node{n.n.Content[i+1]})
	}
	return keys, values
}

func (n node) items() []node {
	if n.n == nil || n.n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]node, len(n.n.Content))
	for i, c := range n.n.Content {
		out[i] = node{c}
	}
	return out
}

// resolve follows a $ref within the document.
func resolve(root, n node) node {
	ref := n.get("$ref").str()
	if ref == "" {
		return n
	}
	at := root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		at = at.get(part)
	}
	return at
}

// refName is the component a $ref names ("" when n is inline).
func refName(n node) string {
	ref := n.get("$ref").str()
	return ref[strings.LastIndex(ref, "/")+1:]
}

// cell makes text fit a Markdown table's cell: one line, no bar.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// typeOf says a schema's type in a few words: a link to a named schema, an array of one, an enum's values,
// the bounds that matter to a caller.
func typeOf(s node) string {
	if name := refName(s); name != "" {
		return "[" + name + "](#" + strings.ToLower(name) + ")"
	}
	var parts []string
	t := s.get("type")
	switch {
	case t.n != nil && t.n.Kind == yaml.SequenceNode:
		var ts []string
		for _, i := range t.items() {
			ts = append(ts, i.str())
		}
		parts = append(parts, strings.Join(ts, " or "))
	case t.str() == "array":
		parts = append(parts, "array of "+typeOf(s.get("items")))
	case t.str() != "":
		parts = append(parts, t.str())
	case s.get("oneOf").ok() || s.get("anyOf").ok():
		var ts []string
		for _, i := range append(s.get("oneOf").items(), s.get("anyOf").items()...) {
			ts = append(ts, typeOf(i))
		}
		parts = append(parts, strings.Join(ts, " or "))
	default:
		parts = append(parts, "any")
	}
	if f := s.get("format").str(); f != "" {
		parts[0] += " (" + f + ")"
	}
	if e := s.get("enum").items(); len(e) > 0 {
		var vs []string
		for _, v := range e {
			vs = append(vs, "`"+v.str()+"`")
		}
		parts = append(parts, "one of "+strings.Join(vs, ", "))
	}
	if p := s.get("pattern").str(); p != "" {
		parts = append(parts, "matching `"+p+"`")
	}
	for _, b := range []struct{ key, say string }{{"minimum", "≥ "}, {"maximum", "≤ "}, {"minLength", "length ≥ "}, {"maxLength", "length ≤ "}} {
		if v := s.get(b.key).str(); v != "" {
			parts = append(parts, b.say+v)
		}
	}
	return strings.Join(parts, ", ")
}

// reference renders the page.
func reference(t *testing.T, y *yaml.Node) []byte {
	root := node{y}
	var b strings.Builder
	info := root.get("info")
	fmt.Fprintf(&b, "# %s reference (%s)\n\n", info.get("title").str(), info.get("version").str())
	b.WriteString("<!-- Generated from services/auth/admin/openapi.yaml by `make admin-api-reference`; do not edit. -->\n\n")
	fmt.Fprintf(&b, "%s It is served at `GET /admin/v1/openapi.yaml` and checked in as\n", info.get("summary").str())
	b.WriteString("[services/auth/admin/openapi.yaml](../services/auth/admin/openapi.yaml); every answer in the API's tests is\n")
	b.WriteString("validated against it, and this page is generated from it ([D59](decisions/0059-admin-api-resources-openapi-one-implementation.md)).\n")
	b.WriteString("How to get a token and call it: [auth.md, \"The admin API\"](auth.md#the-admin-api-adminv1).\n\n")
	b.WriteString(info.get("description").str() + "\n\n")

	type op struct {
		method, path string
		o            node
		params       []node
	}
	byTag := map[string][]op{}
	var tags []string
	for _, tg := range root.get("tags").items() {
		tags = append(tags, tg.get("name").str())
	}
	paths, items := root.get("paths").pairs()
	for i, p := range paths {
		methods, ops := items[i].pairs()
		shared := items[i].get("parameters").items()
		for j, m := range methods {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch"}, m) {
				continue
			}
			tag := "other"
			if tg := ops[j].get("tags").items(); len(tg) > 0 {
				tag = tg[0].str()
			}
			if !slices.Contains(tags, tag) {
				tags = append(tags, tag)
			}
			byTag[tag] = append(byTag[tag], op{strings.ToUpper(m), p, ops[j], append(slices.Clip(shared), ops[j].get("parameters").items()...)})
		}
	}
	descOf := map[string]string{}
	for _, tg := range root.get("tags").items() {
		descOf[tg.get("name").str()] = tg.get("description").str()
	}
	b.WriteString("## Routes\n\n")
	for _, tag := range tags {
		for _, o := range byTag[tag] {
			fmt.Fprintf(&b, "- [`%s %s`](#%s) — %s\n", o.method, o.path, anchor(o.method+" "+o.path), o.o.get("summary").str())
		}
	}
	b.WriteString("\n")
	for _, tag := range tags {
		if len(byTag[tag]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", tag)
		if d := descOf[tag]; d != "" {
			b.WriteString(strings.ToUpper(d[:1]) + d[1:] + ".\n\n")
		}
		for _, o := range byTag[tag] {
			fmt.Fprintf(&b, "### `%s %s`\n\n%s\n\n", o.method, o.path, o.o.get("summary").str())
			sec := o.o.get("security")
			if !sec.ok() {
				sec = root.get("security")
			}
			var scopes []string
			for _, s := range sec.items() {
				_, vs := s.pairs()
				for _, v := range vs {
					for _, sc := range v.items() {
						scopes = append(scopes, "`"+sc.str()+"`")
					}
				}
			}
			switch {
			case len(sec.items()) == 0 || len(sec.items()) == 1 && len(sec.items()[0].n.Content) == 0:
				b.WriteString("No token.\n\n")
			case len(scopes) == 0:
				b.WriteString("Scope: any admin scope.\n\n")
			default:
				fmt.Fprintf(&b, "Scope: %s.\n\n", strings.Join(scopes, " or "))
			}
			if d := o.o.get("description").str(); d != "" {
				b.WriteString(d + "\n\n")
			}
			if len(o.params) > 0 {
				b.WriteString("| parameter | in | required | type | description |\n|---|---|---|---|---|\n")
				for _, p := range o.params {
					p = resolve(root, p)
					req := ""
					if p.get("required").str() == "true" {
						req = "yes"
					}
					fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", p.get("name").str(), p.get("in").str(), req, cell(typeOf(p.get("schema"))), cell(p.get("description").str()))
				}
				b.WriteString("\n")
			}
			if rb := resolve(root, o.o.get("requestBody")); rb.ok() {
				cts, contents := rb.get("content").pairs()
				for i, ct := range cts {
					need := "optional"
					if rb.get("required").str() == "true" {
						need = "required"
					}
					fmt.Fprintf(&b, "Body (%s, %s): %s\n\n", "`"+ct+"`", need, typeOf(contents[i].get("schema")))
				}
			}
			b.WriteString("| status | meaning | body |\n|---|---|---|\n")
			codes, resps := o.o.get("responses").pairs()
			for i, code := range codes {
				r := resolve(root, resps[i])
				cts, contents := r.get("content").pairs()
				var bodies []string
				for k, ct := range cts {
					s := "`" + ct + "`"
					if sch := contents[k].get("schema"); sch.ok() {
						s += " " + typeOf(sch)
					}
					bodies = append(bodies, s)
				}
				fmt.Fprintf(&b, "| %s | %s | %s |\n", code, cell(r.get("description").str()), cell(strings.Join(bodies, "; ")))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("## Schemas\n\n")
	names, schemas := root.get("components").get("schemas").pairs()
	for i, name := range names {
		s := schemas[i]
		fmt.Fprintf(&b, "### %s\n\n", name)
		if d := s.get("description").str(); d != "" {
			b.WriteString(d + "\n\n")
		}
		props, _ := s.get("properties").pairs()
		if len(props) == 0 {
			fmt.Fprintf(&b, "%s.\n\n", strings.ToUpper(typeOf(s)[:1])+typeOf(s)[1:])
			continue
		}
		b.WriteString("| field | type | required | description |\n|---|---|---|---|\n")
		fieldRows(&b, "", s)
		b.WriteString("\n")
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
}

// fieldRows writes a row per property of the object schema s, and of the objects it holds inline (as
// parent.child, or parent[].child for an array's items).
func fieldRows(b *strings.Builder, prefix string, s node) {
	var required []string
	for _, r := range s.get("required").items() {
		required = append(required, r.str())
	}
	props, defs := s.get("properties").pairs()
	for j, p := range props {
		req := ""
		if slices.Contains(required, p) {
			req = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", prefix+p, cell(typeOf(defs[j])), req, cell(defs[j].get("description").str()))
		switch d := defs[j]; {
		case d.get("properties").ok():
			fieldRows(b, prefix+p+".", d)
		case d.get("items").get("properties").ok():
			fieldRows(b, prefix+p+"[].", d.get("items"))
		}
	}
}

// anchor is the heading id GitHub gives "### `GET /admin/v1/users/{id}`".
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
