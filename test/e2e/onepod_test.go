//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/test/internal/cluster"
)

// runOnePod runs a server the test needs beside the platform (the backup phase's S3 server, the move's
// own Redis): pod as a one-replica Deployment named name in ns, without a service-account token, its
// first container serving port (named portName) with small requests and limits, and a Service of the
// same name in front of it. It waits until the Deployment is available and returns the Service as
// created (its ClusterIP set).
func (k *kind) runOnePod(t *testing.T, ns, name, portName string, port int32, pod corev1.PodSpec) *corev1.Service {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app.kubernetes.io/name": name}
	pod.AutomountServiceAccountToken = ptr.To(false)
	c := &pod.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: portName, ContainerPort: port}}
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: portName, Port: port, TargetPort: intstr.FromString(portName)}}}}
	if err := k.client.Create(ctx, dep); err != nil {
		t.Fatalf("the Deployment %s/%s: %v", ns, name, err)
	}
	if err := k.client.Create(ctx, svc); err != nil {
		t.Fatalf("the Service %s/%s: %v", ns, name, err)
	}
	cluster.Eventually(t, 2*time.Minute, name+" available", func() (bool, string) {
		if err := k.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep); err != nil {
			return false, err.Error()
		}
		return dep.Status.AvailableReplicas == 1, fmt.Sprintf("status %+v", dep.Status)
	})
	return svc
}
