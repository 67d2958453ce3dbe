package chart_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/test/internal/cluster"
	"github.com/formsservice/formsservice/test/internal/repo"
)

// dryRun sends every rendered object to the API server as a strict server-side dry run: the real
// schemas of Kubernetes' own kinds and of the CRDs (ours and the Prometheus Operator's), with unknown or
// duplicate fields refused (fieldValidation=Strict) instead of silently dropped, then admission and the
// CRD's CEL rules; nothing is stored. An object that already exists (a CRD the cluster started with) is
// checked as a dry-run update of it. It returns one line per refused object.
func dryRun(t *testing.T, c *cluster.Cluster, rendered string) []string {
	t.Helper()
	ctx := context.Background()
	var refused []string
	for _, m := range parse(t, rendered) {
		u := &unstructured.Unstructured{Object: m.Object}
		namespaced, err := c.Client.IsObjectNamespaced(u)
		if err != nil {
			refused = append(refused, m.kind()+" "+m.name()+" ("+m.Source+"): "+err.Error())
			continue
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace(releaseNS)
		}
		err = c.Client.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))
		if apierrors.IsAlreadyExists(err) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(u.GroupVersionKind())
			if err = c.Client.Get(ctx, client.ObjectKeyFromObject(u), live); err == nil {
				u.SetResourceVersion(live.GetResourceVersion())
				err = c.Client.Update(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))
			}
		}
		if err != nil {
			refused = append(refused, m.kind()+" "+m.name()+" ("+m.Source+"): "+err.Error())
		}
	}
	return refused
}

// TestChart_StrictServerSideDryRun renders every golden case and has the API server accept each object,
// then proves the check can fail: each mistake below is refused with a message that names it. The same
// control plane (nothing installed but the CRDs) also serves the control of the RBAC test.
func TestChart_StrictServerSideDryRun(t *testing.T) {
	t.Parallel()
	c := cluster.Start(t, repo.Path(t, "config", "crd", "bases"), prometheusOperatorCRDs(t))
	c.CreateNamespace(t, releaseNS)
	c.CreateNamespace(t, "monitoring") // grafanaDashboard.namespace in full.values.yaml
	for _, ns := range []string{"shop", "checkout"} {
		c.CreateNamespace(t, ns) // watchNamespaces in production.values.yaml
	}

	t.Run("golden cases are accepted", func(t *testing.T) {
		t.Parallel()
		for _, gc := range goldenCases {
			t.Run(gc.name, func(t *testing.T) {
				t.Parallel()
				if refused := dryRun(t, c, mustRender(t, []string{gc.values + ".values.yaml"}, gc.apiVersions)); len(refused) > 0 {
					t.Errorf("the API server refused:\n%s", strings.Join(refused, "\n"))
				}
			})
		}
	})

	t.Run("mistakes are refused", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name string
			args []string
			want string
		}{
			{"misspelt field in a pass-through value", []string{"--set-json", `extraEnv=[{"name":"A","valueFromm":{}}]`},
				`unknown field "spec.template.spec.containers[0].env[0].valueFromm"`},
			{"misspelt field in the FormsService spec", []string{"--set", "formsService.enabled=true", "--api-versions", formsServiceAPI,
				"--set-json", `formsService.spec={"publicURL":"https://id.example.com","allowedOrigins":["https://a.example.com"],"allowedOrigin":["https://b.example.com"]}`},
				`unknown field "spec.allowedOrigin"`},
			{"wrong type in a pass-through value", []string{"--set-json", `tolerations=[{"key":"a","tolerationSeconds":"soon"}]`}, "tolerationSeconds"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				refused := strings.Join(dryRun(t, c, mustRender(t, nil, nil, tc.args...)), "\n")
				if refused == "" {
					t.Fatal("the API server accepted it")
				}
				if !strings.Contains(refused, tc.want) {
					t.Fatalf("the refusal does not name %q:\n%s", tc.want, refused)
				}
			})
		}
	})

	// The control of TestRBAC_ManagerRunsAsTheChartsServiceAccount: a ServiceAccount with no role at all
	// must produce forbidden requests, or the impersonating proxy would prove nothing.
	t.Run("forbidden requests are caught", func(t *testing.T) {
		t.Parallel()
		manager := testproc.Build(t, "./cmd/manager")
		im := c.ImpersonateServiceAccount(t, releaseNS, "nobody")
		testproc.Start(t, []string{"KUBECONFIG=" + im.KubeConfig}, manager, "--leader-elect=false",
			"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0")
		cluster.Eventually(t, 30*time.Second, "a forbidden request is recorded", func() (bool, string) {
			return len(im.Forbidden()) > 0, fmt.Sprintf("%d requests, none forbidden", im.Requests())
		})
	})
}
