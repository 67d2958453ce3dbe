package chart_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/formsservice/formsservice/test/internal/cluster"
	"github.com/formsservice/formsservice/test/internal/repo"
)

// futureField is the spec field the "newer" chart of the rollback test adds to the CRD.
const futureField = "futureSetting"

// chartWithCRD copies the chart to a temporary folder and lets edit change its CRD: the chart of a
// newer operator, whose CRD knows more than this one's.
func chartWithCRD(t *testing.T, edit func(crd *apiextensionsv1.CustomResourceDefinition)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "formsservice-operator")
	if err := os.CopyFS(dir, os.DirFS(repo.Path(t, chartDir))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "files", "crds", "platform.formsservice.io_formsservices.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	edit(&crd)
	out, err := yaml.Marshal(&crd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withFutureField adds spec.futureSetting (a string) to every version of the CRD.
func withFutureField(crd *apiextensionsv1.CustomResourceDefinition) {
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties[futureField] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
}

// withBetaStorage adds a version v1beta1 (the same schema) and stores FormsServices in it.
func withBetaStorage(crd *apiextensionsv1.CustomResourceDefinition) {
	beta := *crd.Spec.Versions[0].DeepCopy()
	beta.Name = "v1beta1"
	crd.Spec.Versions[0].Storage = false
	beta.Storage = true
	crd.Spec.Versions = append(crd.Spec.Versions, beta)
}

// crdKnowsFutureField says whether the live CRD's schema has spec.futureSetting.
func crdKnowsFutureField(t *testing.T, c *cluster.Cluster) bool {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if !exists(t, c, &crd, "", formsServiceCRD) {
		t.Fatal("the CRD is gone")
	}
	_, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties[futureField]
	return ok
}

// futureValue reads spec.futureSetting of the FormsService shop, "" when it has none.
func futureValue(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	fs := object(formsServiceGVK)
	if !exists(t, c, fs, "shop", "shop") {
		t.Fatal("the FormsService shop is gone")
	}
	v, _, _ := unstructured.NestedString(fs.Object, "spec", futureField)
	return v
}

// touch writes the FormsService shop again (an annotation, as the operator's own patches do with
// metadata), so that the API server stores it under the CRD it has now.
func touch(t *testing.T, c *cluster.Cluster, value string) {
	t.Helper()
	fs := object(formsServiceGVK)
	fs.SetNamespace("shop")
	fs.SetName("shop")
	patch := []byte(`{"metadata":{"annotations":{"example.com/touched":"` + value + `"}}}`)
	if err := c.Client.Patch(context.Background(), fs, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// TestChartRollback_TheCRDGoesBackWithTheRelease proves what `helm rollback` does to the CRD, which the
// chart renders as a template (so that upgrades upgrade it): the rollback puts back the CRD of the
// revision it returns to. A field only the newer CRD knows then vanishes from every FormsService read
// (the API server prunes what the schema lacks) and is deleted from storage the next time the object is
// written — the operator writes each one at its next reconcile — so rolling forward again does not bring
// the value back. The safe way back keeps the newer CRD: `helm upgrade` to the older
// chart with crds.enabled=false (helm.sh/resource-policy: keep leaves the CRD in place), which loses
// nothing, and a later upgrade with crds.enabled=true takes the CRD back into the release. A rollback
// to a CRD without a version FormsServices were stored in is refused by the API server. On the way, the
// first install's NOTES point at the production values (watchNamespaces, writeFence), and say nothing of
// them once they are set.
func TestChartRollback_TheCRDGoesBackWithTheRelease(t *testing.T) {
	t.Parallel()
	c := cluster.Start(t)
	ctx := context.Background()
	newer := chartWithCRD(t, withFutureField)

	// Revision 1: this chart. Revision 2: the newer one, and a FormsService that uses its new field.
	out := helmAt(t, c, "install", releaseName, chartDir, "--namespace", releaseNS, "--create-namespace")
	c.WaitEstablished(t, formsServiceCRD)
	// The NOTES point a default install at the production values, and are quiet once they are set.
	const productionHint = "For production, limit the operator"
	if !strings.Contains(out, productionHint) {
		t.Errorf("NOTES of a default install lack the production advice:\n%s", out)
	}
	if out := helmAt(t, c, "upgrade", releaseName, chartDir, "--namespace", releaseNS, "--dry-run",
		"--values", testdataPath(t, "production.values.yaml")); strings.Contains(out, productionHint) {
		t.Errorf("NOTES with the production values still give the production advice:\n%s", out)
	}
	helmAt(t, c, "upgrade", releaseName, newer, "--namespace", releaseNS, "--reuse-values")
	if !crdKnowsFutureField(t, c) {
		t.Fatal("the upgrade did not upgrade the CRD")
	}
	c.CreateNamespace(t, "shop")
	fs := monitoredFormsService("shop")
	if err := unstructured.SetNestedField(fs.Object, "kept", "spec", futureField); err != nil {
		t.Fatal(err)
	}
	// The API server serves a changed schema shortly after the CRD is updated: a strict create is
	// refused while the field is still unknown.
	cluster.Eventually(t, 30*time.Second, "the newer CRD served", func() (bool, string) {
		err := c.Client.Create(ctx, fs.DeepCopy(), client.FieldValidation("Strict"))
		return err == nil, errString(err)
	})
	if got := futureValue(t, c); got != "kept" {
		t.Fatalf("spec.%s = %q after create, want kept", futureField, got)
	}

	// The safe way back: the older chart without its CRD. The newer CRD stays, and so does the field
	// through every write.
	out = helmAt(t, c, "upgrade", releaseName, chartDir, "--namespace", releaseNS, "--reuse-values", "--set", "crds.enabled=false")
	if !crdKnowsFutureField(t, c) {
		t.Fatalf("helm upgrade with crds.enabled=false changed or removed the CRD:\n%s", out)
	}
	touch(t, c, "after-safe-downgrade")
	if got := futureValue(t, c); got != "kept" {
		t.Errorf("spec.%s = %q after a write under the kept CRD, want kept", futureField, got)
	}
	// Forward again with the CRD: helm takes the kept CRD back into the release (revision 4).
	helmAt(t, c, "upgrade", releaseName, newer, "--namespace", releaseNS, "--reuse-values", "--set", "crds.enabled=true")
	if manifest := helmAt(t, c, "get", "manifest", releaseName, "--namespace", releaseNS); !strings.Contains(manifest, "kind: CustomResourceDefinition") {
		t.Error("after the upgrade with crds.enabled=true the CRD is not part of the release")
	}

	// `helm rollback` to revision 1 puts this chart's CRD back: the FormsService stays, but its field
	// is pruned at its next write and does not come back when the newer CRD returns.
	helmAt(t, c, "rollback", releaseName, "1", "--namespace", releaseNS)
	if crdKnowsFutureField(t, c) {
		t.Fatal("helm rollback left the newer CRD in place")
	}
	cluster.Eventually(t, 30*time.Second, "the older CRD served, the field pruned at a write", func() (bool, string) {
		touch(t, c, "after-rollback")
		v := futureValue(t, c)
		return v == "", "spec." + futureField + " = " + v
	})
	helmAt(t, c, "rollback", releaseName, "4", "--namespace", releaseNS)
	if !crdKnowsFutureField(t, c) {
		t.Fatal("helm rollback to revision 4 did not bring the newer CRD back")
	}
	if got := futureValue(t, c); got != "" {
		t.Errorf("spec.%s = %q after rolling forward: the pruned value came back, which the docs say it does not", futureField, got)
	}

	// A newer chart that stores FormsServices as v1beta1: once one is stored so, a rollback to a CRD
	// without v1beta1 is refused (status.storedVersions), and the CRD keeps its versions.
	beta := chartWithCRD(t, withBetaStorage)
	helmAt(t, c, "upgrade", releaseName, beta, "--namespace", releaseNS, "--reuse-values")
	betaFS := monitoredFormsService("shop")
	betaFS.SetGroupVersionKind(schema.GroupVersionKind{Group: formsServiceGVK.Group, Version: "v1beta1", Kind: formsServiceGVK.Kind})
	betaFS.SetName("stored-as-beta")
	cluster.Eventually(t, 30*time.Second, "v1beta1 served", func() (bool, string) {
		err := c.Client.Create(ctx, betaFS.DeepCopy())
		return err == nil, errString(err)
	})
	var crd apiextensionsv1.CustomResourceDefinition
	cluster.Eventually(t, 30*time.Second, "v1beta1 among the stored versions", func() (bool, string) {
		exists(t, c, &crd, "", formsServiceCRD)
		return strings.Contains(strings.Join(crd.Status.StoredVersions, ","), "v1beta1"), strings.Join(crd.Status.StoredVersions, ",")
	})
	out, err := helm(t, []string{"KUBECONFIG=" + c.KubeConfig}, "rollback", releaseName, "1", "--namespace", releaseNS)
	if err == nil || !strings.Contains(out, "storedVersions") {
		t.Errorf("helm rollback to a CRD without the stored version v1beta1: err %v, want a refusal naming storedVersions:\n%s", err, out)
	}
	exists(t, c, &crd, "", formsServiceCRD)
	if len(crd.Spec.Versions) != 2 {
		t.Errorf("after the refused rollback the CRD has %d versions, want both", len(crd.Spec.Versions))
	}
	if !exists(t, c, object(formsServiceGVK), "shop", "stored-as-beta") {
		t.Error("the FormsService stored as v1beta1 is gone after the refused rollback")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
