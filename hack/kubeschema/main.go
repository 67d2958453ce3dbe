// Command kubeschema writes the JSON schemas that kubeconform validates against, offline.
//
// kubeconform's default schemas live on the internet; our machines cannot reach it. The k8s.io/kubernetes
// module ships the API server's OpenAPI v2 document (api/openapi-spec/swagger.json), and every CRD carries
// its own OpenAPI v3 schema, so both are turned into kubeconform's layout here:
//
//	kubeschema -swagger swagger.json -out DIR -kube-version 1.37.1
//	    DIR/v1.37.1-standalone-strict/<kind>-<group's first label>-<version>.json  (kubeconform's -schema-location DIR)
//	kubeschema -crd crd.yaml[,crd2.yaml...] -out DIR
//	    DIR/<group>/<kind>_<version>.json  (-schema-location 'DIR/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json')
//
// Each schema is made "strict" the way kubeconform's published ones are: an object that lists its
// properties refuses any other (additionalProperties: false), so a misspelt field fails validation instead
// of being silently dropped by the API server. IntOrString and Quantity accept both strings and numbers, as
// the API server does. Referenced definitions are copied into the schema's own "definitions" and keep
// their local $refs, which keeps every file self-contained and lets recursive types (JSONSchemaProps) stay
// recursive.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kubeschema", flag.ContinueOnError)
	swagger := fs.String("swagger", "", "the Kubernetes OpenAPI v2 document (swagger.json)")
	kubeVersion := fs.String("kube-version", "", "Kubernetes version the swagger document belongs to, e.g. 1.37.1")
	crds := fs.String("crd", "", "comma-separated CRD YAML files (multi-document files are fine)")
	out := fs.String("out", "", "output folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || (*swagger == "") == (*crds == "") {
		return errors.New("usage: kubeschema -out DIR (-swagger swagger.json -kube-version X.Y.Z | -crd a.yaml,b.yaml)")
	}
	var files map[string]schema
	var err error
	if *swagger != "" {
		if *kubeVersion == "" {
			return errors.New("-kube-version is required with -swagger")
		}
		var doc []byte
		if doc, err = os.ReadFile(*swagger); err != nil {
			return err
		}
		files, err = fromSwagger(doc, "v"+strings.TrimPrefix(*kubeVersion, "v"))
	} else {
		files, err = fromCRDFiles(strings.Split(*crds, ","))
	}
	if err != nil {
		return err
	}
	return write(*out, files)
}

// schema is one JSON schema node, decoded generically.
type schema = map[string]any

func write(dir string, files map[string]schema) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		b, err := json.MarshalIndent(files[name], "", "  ")
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "kubeschema: wrote %d schemas under %s\n", len(files), dir)
	return nil
}

// kindSuffix mirrors kubeconform's file naming: "-<first label of the group>-<version>", or "-<version>"
// for the core group.
func kindSuffix(group, version string) string {
	if group == "" {
		return "-" + strings.ToLower(version)
	}
	return "-" + strings.ToLower(strings.Split(group, ".")[0]) + "-" + strings.ToLower(version)
}
