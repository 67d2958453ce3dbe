package controllers

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The credentials Secret of spec.forms.files' bucket is checked when the FormsService is reconciled, as
// the backups' is (BackupCredentialsMissing), not by the first upload's 502: missing, or without the
// keys the forms service needs, it is Degraded with FilesCredentialsMissing at once, naming the field
// and the keys, never a value; the forms pods roll out all the same (the Secret is optional to them),
// and roll again when it is created or changed (an environment is read at start only).
func TestFiles_MissingCredentialsShowAtOnceAndRollTheForms(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	links := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "form-links"},
		Data: map[string][]byte{"key": []byte("0123456789abcdef0123456789abcdef-link-key")}}
	if err := k8s.Create(ctx, links); err != nil {
		t.Fatal(err)
	}
	fs := sampleFS(ns)
	fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{{ID: "apply", Fields: []v1alpha1.FormField{
		{Name: "email", Type: "email", Required: true}, {Name: "name", Type: "text"}, {Name: "x", Type: "text"}}}}
	withFileField(func(*v1alpha1.DeclaredForm, *v1alpha1.FormField) {})(fs, &fs.Spec.Forms.Declared[0]) // the third: a CV
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "FilesCredentialsMissing",
		`Secret "form-uploads-s3" named by spec.forms.files.s3.credentialsSecretRef does not exist in namespace `+ns)
	hash := func() (string, error) {
		var d appsv1.Deployment
		if err := k8s.Get(ctx, key(ns, "acme-forms"), &d); err != nil {
			return "", err
		}
		return d.Spec.Template.Annotations[render.RestartHashAnnotation], nil
	}
	var before string
	eventually(t, func() (err error) { before, err = hash(); return err }) // rolled out without it

	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "form-uploads-s3"},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("uploader"), "AWS_SECRET_ACCESS_KEY": []byte(" \n")}}
	if err := k8s.Create(ctx, creds); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "FilesCredentialsMissing",
		`Secret "form-uploads-s3" named by spec.forms.files.s3.credentialsSecretRef has no AWS_SECRET_ACCESS_KEY`)

	creds.Data["AWS_SECRET_ACCESS_KEY"] = []byte("s3cr3t-value")
	if err := k8s.Update(ctx, creds); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	eventually(t, func() error {
		now, err := hash()
		if err == nil && now == before {
			return fmt.Errorf("the forms pods' restart hash is still %s: they would not get the credentials", now)
		}
		return err
	})
}
