package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	apiyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// customResourceDefinition holds the parts of an apiextensions.k8s.io/v1 CRD that a schema needs.
type customResourceDefinition struct {
	Kind string `json:"kind"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
			Schema *struct {
				OpenAPIV3Schema schema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// fromCRDFiles returns one strict schema per served version of every CRD in the files, keyed
// <group>/<kind>_<version>.json.
func fromCRDFiles(paths []string) (map[string]schema, error) {
	files := map[string]schema{}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := fromCRDs(b, files); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no CustomResourceDefinition with a schema found")
	}
	return files, nil
}

func fromCRDs(doc []byte, files map[string]schema) error {
	dec := apiyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
	for {
		var crd customResourceDefinition
		if err := dec.Decode(&crd); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if crd.Kind != "CustomResourceDefinition" {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil {
				continue
			}
			name := fmt.Sprintf("%s/%s_%s.json", crd.Spec.Group, strings.ToLower(crd.Spec.Names.Kind), v.Name)
			files[name] = strict(v.Schema.OpenAPIV3Schema).(schema)
		}
	}
}
