package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestStrict_ClosesObjectsAndOpensIntOrString(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"object with properties is closed",
			`{"type":"object","properties":{"a":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`},
		{"nested objects in items are closed",
			`{"type":"array","items":{"properties":{"b":{"type":"integer"}}}}`,
			`{"type":"array","items":{"properties":{"b":{"type":"integer"}},"additionalProperties":false}}`},
		{"map values stay maps",
			`{"type":"object","additionalProperties":{"type":"string"}}`,
			`{"type":"object","additionalProperties":{"type":"string"}}`},
		{"preserve-unknown-fields stays open",
			`{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{}}}`,
			`{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{}}}`},
		{"int-or-string format",
			`{"properties":{"port":{"type":"string","format":"int-or-string","description":"d"}}}`,
			`{"properties":{"port":{"description":"d","oneOf":[{"type":"string"},{"type":"integer"}]}},"additionalProperties":false}`},
		{"int-or-string CRD extension",
			`{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`,
			`{"oneOf":[{"type":"string"},{"type":"integer"}]}`},
		{"combinator branches stay open",
			`{"properties":{"a":{}},"anyOf":[{"properties":{"a":{}},"required":["a"]}]}`,
			`{"properties":{"a":{}},"additionalProperties":false,"anyOf":[{"properties":{"a":{}},"required":["a"]}]}`},
		{"nullable",
			`{"type":"string","nullable":true}`,
			`{"type":["string","null"],"nullable":true}`},
		{"a property named like a keyword is a property",
			`{"properties":{"format":{"type":"string"},"properties":{"type":"object","additionalProperties":{"$ref":"#/definitions/x"}}}}`,
			`{"properties":{"format":{"type":"string"},"properties":{"type":"object","additionalProperties":{"$ref":"#/definitions/x"}}},"additionalProperties":false}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strict(decode(t, c.in))
			if want := decode(t, c.want); !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Fatalf("got  %s\nwant %s", g, c.want)
			}
		})
	}
}

func TestFromSwagger_OneSelfContainedFilePerKind(t *testing.T) {
	doc := []byte(`{"definitions":{
	  "io.k8s.api.apps.v1.Deployment":{"properties":{"spec":{"$ref":"#/definitions/io.k8s.api.apps.v1.DeploymentSpec"}},
	    "x-kubernetes-group-version-kind":[{"group":"apps","version":"v1","kind":"Deployment"}]},
	  "io.k8s.api.apps.v1.DeploymentSpec":{"properties":{"replicas":{"type":"integer"},"self":{"$ref":"#/definitions/io.k8s.api.apps.v1.DeploymentSpec"}}},
	  "io.k8s.api.core.v1.ConfigMap":{"properties":{"cpu":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}},
	    "x-kubernetes-group-version-kind":[{"group":"","version":"v1","kind":"ConfigMap"}]},
	  "io.k8s.apimachinery.pkg.api.resource.Quantity":{"type":"string"},
	  "io.k8s.api.core.v1.Unused":{"type":"object"}}}`)
	files, err := fromSwagger(doc, "v1.37.1")
	if err != nil {
		t.Fatal(err)
	}
	dep, ok := files["v1.37.1-standalone-strict/deployment-apps-v1.json"]
	if !ok {
		t.Fatalf("no deployment schema in %v", keys(files))
	}
	defs := dep["definitions"].(map[string]schema)
	if _, ok := defs["io.k8s.api.apps.v1.DeploymentSpec"]; !ok || len(defs) != 1 {
		t.Fatalf("deployment definitions = %v, want only DeploymentSpec", defs)
	}
	if dep["additionalProperties"] != false {
		t.Fatal("deployment root is not strict")
	}
	cm, ok := files["v1.37.1-standalone-strict/configmap-v1.json"]
	if !ok {
		t.Fatalf("no configmap schema in %v", keys(files))
	}
	q := cm["definitions"].(map[string]schema)[quantityDef]
	if _, ok := q["oneOf"]; !ok {
		t.Fatalf("Quantity does not accept numbers: %v", q)
	}
	if len(files) != 2 {
		t.Fatalf("files = %v, want 2", keys(files))
	}
}

func TestKindSuffix_MatchesKubeconform(t *testing.T) {
	for _, c := range []struct{ group, version, want string }{
		{"", "v1", "-v1"},
		{"apps", "v1", "-apps-v1"},
		{"rbac.authorization.k8s.io", "v1", "-rbac-v1"},
		{"monitoring.coreos.com", "v1", "-monitoring-v1"},
	} {
		if got := kindSuffix(c.group, c.version); got != c.want {
			t.Errorf("kindSuffix(%q,%q) = %q, want %q", c.group, c.version, got, c.want)
		}
	}
}

func TestFromCRDs_ServedVersionsOnly(t *testing.T) {
	files := map[string]schema{}
	err := fromCRDs([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: platform.formsservice.io
  names: {kind: FormsService}
  versions:
  - name: v1alpha1
    served: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
  - name: v1alpha0
    served: false
    schema: {openAPIV3Schema: {type: object}}
---
apiVersion: v1
kind: ConfigMap
`), files)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := files["platform.formsservice.io/formsservice_v1alpha1.json"]
	if !ok || len(files) != 1 {
		t.Fatalf("files = %v", keys(files))
	}
	spec := s["properties"].(schema)["spec"].(schema)
	if spec["additionalProperties"] != false {
		t.Fatalf("spec not strict: %v", spec)
	}
}

func keys(m map[string]schema) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}
