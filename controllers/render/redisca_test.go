package render

import (
	"testing"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
)

// spec.redis.caSecretRef becomes redis.caFile in every service's configuration, the Secret's key is
// mounted there (that key only), and the reconciler checks it holds a PEM certificate before it rolls.
func TestRedisCASecretRef_RenderedAsAMountedCAFileForEveryService(t *testing.T) {
	fs := base()
	fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"s:26379"}, Mode: v1alpha1.RedisSentinel, MasterName: "mymaster",
		TLS: true, CASecretRef: &v1alpha1.SecretKeySelector{Name: "redis-ca", Key: "ca.crt"}}
	want := SecretsDir + "/redis-ca/ca.crt"
	for _, comp := range Components {
		if c := ServiceConfig(fs, comp, in); c.Redis.CAFile != want || !c.Redis.TLS {
			t.Errorf("%s: redis = %+v, want caFile %s", comp, c.Redis, want)
		}
		if _, err := RenderConfig(fs, comp, in); err != nil {
			t.Errorf("%s: RenderConfig: %v", comp, err)
		}
		d := typed[appsv1.Deployment](t, Deployment(fs, comp, in))
		mounted := false
		for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
			mounted = mounted || (m.MountPath == SecretsDir+"/redis-ca" && m.ReadOnly)
		}
		projected := false
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == "redis-ca" {
				projected = len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "ca.crt"
			}
		}
		if !mounted || !projected {
			t.Errorf("%s: the CA Secret is not mounted read-only with only its key (mounted %v, projected %v)", comp, mounted, projected)
		}
	}
	var ref *SecretRef
	for _, r := range UserSecretRefs(fs) {
		if r.Field == "spec.redis.caSecretRef" {
			ref = &r
		}
	}
	if ref == nil || ref.Check == nil {
		t.Fatalf("the CA Secret is not among the checked user Secrets: %+v", UserSecretRefs(fs))
	}
	if ref.Check([]byte("not a certificate")) == nil {
		t.Error("a CA Secret without a PEM certificate passes the check")
	}
}
