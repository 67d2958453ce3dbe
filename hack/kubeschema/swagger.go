package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

const (
	refPrefix    = "#/definitions/"
	quantityDef  = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	intOrString  = "int-or-string"
	gvkExtension = "x-kubernetes-group-version-kind"
)

// fromSwagger returns one standalone strict schema per kind (group, version, kind) of the document, keyed
// by its path under the output folder.
func fromSwagger(doc []byte, kubeVersion string) (map[string]schema, error) {
	var spec struct {
		Definitions map[string]schema `json:"definitions"`
	}
	if err := json.Unmarshal(doc, &spec); err != nil {
		return nil, fmt.Errorf("swagger document: %w", err)
	}
	if len(spec.Definitions) == 0 {
		return nil, fmt.Errorf("swagger document has no definitions")
	}
	defs := make(map[string]schema, len(spec.Definitions))
	for name, def := range spec.Definitions {
		if name == quantityDef {
			// The API server accepts `cpu: 1` as well as `cpu: "1"`.
			defs[name] = schema{"oneOf": []any{schema{"type": "string"}, schema{"type": "number"}}}
			continue
		}
		defs[name] = strict(def).(schema)
	}

	dir := kubeVersion + "-standalone-strict/"
	files := map[string]schema{}
	owner := map[string]string{} // file name -> definition, to report collisions
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		gvks, _ := spec.Definitions[name][gvkExtension].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			if version == "" || kind == "" {
				return nil, fmt.Errorf("%s: malformed %s", name, gvkExtension)
			}
			file := dir + strings.ToLower(kind) + kindSuffix(group, version) + ".json"
			if prev, ok := owner[file]; ok {
				return nil, fmt.Errorf("%s and %s both map to %s", prev, name, file)
			}
			owner[file] = name
			files[file] = standalone(defs, name)
		}
	}
	return files, nil
}

// standalone copies the definition and every definition it reaches into one schema document.
func standalone(defs map[string]schema, root string) schema {
	reached := map[string]schema{}
	var visit func(node any)
	visit = func(node any) {
		switch n := node.(type) {
		case map[string]any:
			if ref, ok := n["$ref"].(string); ok && strings.HasPrefix(ref, refPrefix) {
				name := strings.TrimPrefix(ref, refPrefix)
				if _, seen := reached[name]; !seen {
					if def, ok := defs[name]; ok {
						reached[name] = def
						visit(def)
					}
				}
			}
			for _, v := range n {
				visit(v)
			}
		case []any:
			for _, v := range n {
				visit(v)
			}
		}
	}
	visit(defs[root])
	out := schema{}
	for k, v := range defs[root] {
		out[k] = v
	}
	if len(reached) > 0 {
		out["definitions"] = reached
	}
	return out
}
