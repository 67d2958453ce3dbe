package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The API server and the auth service agree about the console's group, spec.auth.adminGroup: a name
// the CRD admits is one users.CheckGroup takes (so `users groups add` can put someone in it), and each
// name it refuses is refused at admission, never found as a console nobody can be let into.
func TestCRD_AdminGroupAgreesWithTheService(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		group string
		admit bool
	}{
		{"formsservice-admins", true},
		{"support@acme.example", true},
		{"kc:ops/tier.2+oncall_x", true},
		{"9ops", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"-admins", false},
		{".admins", false},
		{"two words", false},
		{"ops\n", false},
		{"admins*", false},
		{"ädmins", false},
	}
	for i, tc := range cases {
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("group%d", i)
		fs.Spec.Console = &v1alpha1.ConsoleSpec{Enabled: true}
		fs.Spec.Auth.AdminGroup = tc.group
		svcErr := users.CheckGroup(tc.group)
		apiErr := k8s.Create(context.Background(), fs, client.DryRunAll)
		switch {
		case tc.admit && apiErr != nil:
			t.Errorf("%q: the CRD refuses it: %v", tc.group, apiErr)
		case tc.admit && svcErr != nil:
			t.Errorf("%q: the CRD admits it, the service refuses it: %v", tc.group, svcErr)
		case !tc.admit && (apiErr == nil || !strings.Contains(apiErr.Error(), "spec.auth.adminGroup")):
			t.Errorf("%q: %v, want a refusal naming spec.auth.adminGroup", tc.group, apiErr)
		case !tc.admit && svcErr == nil:
			t.Errorf("%q: the CRD refuses it (%v), the service would take it", tc.group, apiErr)
		}
	}
}

// A FormsService with spec.console renders the auth configuration that serves the console for its
// group; the reconciled ConfigMap is what the auth pods load.
func TestConsole_RenderedIntoTheAuthConfigMap(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Console = &v1alpha1.ConsoleSpec{Enabled: true}
	fs.Spec.Auth.AdminGroup = "support"
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	authConfig := func() (*config.Config, error) {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, key(ns, "acme-config"), cm); err != nil {
			return nil, err
		}
		c, err := config.Parse([]byte(cm.Data["auth.yaml"]))
		if err != nil {
			return nil, err
		}
		c.ApplyDefaults()
		return c, nil
	}
	eventually(t, func() error {
		c, err := authConfig()
		if err != nil {
			return err
		}
		if !c.Auth.Console.On() || c.Auth.Admin.Group != "support" {
			return fmt.Errorf("console %+v, admin %+v", c.Auth.Console, c.Auth.Admin)
		}
		return nil
	})

	// Turned off, the key goes and the service's default (off) applies.
	if err := k8s.Get(ctx, key(ns, "acme"), fs); err != nil {
		t.Fatal(err)
	}
	fs.Spec.Console.Enabled = false
	if err := k8s.Update(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		c, err := authConfig()
		if err != nil {
			return err
		}
		if c.Auth.Console.On() {
			return fmt.Errorf("console still on: %+v", c.Auth.Console)
		}
		return nil
	})
}
