package render

import (
	"encoding/json"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// Every object is rendered as a typed server-side apply configuration (k8s.io/client-go/applyconfigurations):
// its fields are pointers, so the request holds exactly the fields set here and nothing a Go zero value
// would add. An empty object that is set, like a NetworkPolicy peer's `namespaceSelector: {}` (any
// namespace), is sent as it is; a field left unset is not sent, so the operator never claims it.

// OwnerReference makes fs the controller of an object: deleting fs deletes it (the garbage collector
// waits for it with blockOwnerDeletion), and the operator only ever writes objects that carry it.
func OwnerReference(fs *v1alpha1.FormsService) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("FormsService").
		WithName(fs.Name).
		WithUID(fs.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// objectMeta is the metadata of an object fs owns: name, namespace, the operator's labels and the owner
// reference.
func objectMeta(fs *v1alpha1.FormsService, name, component string) *metav1ac.ObjectMetaApplyConfiguration {
	return metav1ac.ObjectMeta().
		WithName(name).
		WithNamespace(fs.Namespace).
		WithLabels(Labels(fs, component)).
		WithOwnerReferences(OwnerReference(fs))
}

// applyConfigOf carries a value of the FormsService's spec that has the Kubernetes API's own type (a
// NetworkPolicy peer, resource requirements, tolerations) over into its apply configuration. Those types
// mark every optional field omitempty, so their JSON holds exactly what the user wrote, and the apply
// configuration of the same shape reads it back field for field.
func applyConfigOf[T any](v any) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic("render: marshalling " + err.Error()) // API types always marshal
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic("render: an API type does not fit its apply configuration: " + err.Error())
	}
	return out
}

// applyConfigsOf is applyConfigOf for each element of a list.
func applyConfigsOf[T any, V any](vs []V) []*T {
	if vs == nil {
		return nil
	}
	out := make([]*T, 0, len(vs))
	for _, v := range vs {
		out = append(out, applyConfigOf[T](v))
	}
	return out
}
