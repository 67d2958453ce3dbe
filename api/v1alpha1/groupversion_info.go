// Package v1alpha1 holds the FormsService API: one resource that a platform team applies to run the
// formsservice platform (forms, auth and health behind an ingress, backed by Redis).
//
// +kubebuilder:object:generate=true
// +groupName=platform.formsservice.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of FormsService.
	GroupVersion = schema.GroupVersion{Group: "platform.formsservice.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this group version.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &FormsService{}, &FormsServiceList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
