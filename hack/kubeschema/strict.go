package main

// strict returns a copy of an OpenAPI schema node in which every object that lists its properties refuses
// unknown ones, and int-or-string fields accept integers and strings. Objects marked
// x-kubernetes-preserve-unknown-fields stay open, as the API server keeps their unknown fields.
func strict(node any) any {
	return strictNode(node, true)
}

func strictNode(node any, closeObjects bool) any {
	n, ok := node.(map[string]any)
	if !ok {
		return node
	}
	if f, _ := n["format"].(string); f == intOrString || n["x-kubernetes-int-or-string"] == true {
		out := schema{"oneOf": []any{schema{"type": "string"}, schema{"type": "integer"}}}
		if d, ok := n["description"]; ok {
			out["description"] = d
		}
		return out
	}
	out := make(schema, len(n)+1)
	for k, v := range n {
		out[k] = v
	}
	if props, ok := n["properties"].(map[string]any); ok {
		p := make(schema, len(props))
		for name, sub := range props {
			p[name] = strictNode(sub, true)
		}
		out["properties"] = p
		_, has := n["additionalProperties"]
		if closeObjects && !has && n["x-kubernetes-preserve-unknown-fields"] != true {
			out["additionalProperties"] = false
		}
	}
	switch items := n["items"].(type) {
	case map[string]any:
		out["items"] = strictNode(items, true)
	case []any:
		l := make([]any, len(items))
		for i, sub := range items {
			l[i] = strictNode(sub, true)
		}
		out["items"] = l
	}
	if ap, ok := n["additionalProperties"].(map[string]any); ok {
		out["additionalProperties"] = strictNode(ap, true)
	}
	// Branches of a combinator describe a part of the object; closing them would refuse the rest.
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := n[key].([]any); ok {
			c := make([]any, len(l))
			for i, sub := range l {
				c[i] = strictNode(sub, false)
			}
			out[key] = c
		}
	}
	if not, ok := n["not"].(map[string]any); ok {
		out["not"] = strictNode(not, false)
	}
	if n["nullable"] == true {
		if t, ok := n["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
	}
	return out
}
