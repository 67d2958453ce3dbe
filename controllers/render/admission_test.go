package render

import (
	"regexp"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// podsOfFS renders every pod template of fs: the three services' and the managed Redis's.
func podsOfFS(t *testing.T, fs *v1alpha1.FormsService, in Inputs) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	for _, c := range Components {
		out[c] = typed[appsv1.Deployment](t, Deployment(fs, c, in)).Spec.Template.Spec
	}
	out[Redis] = typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec
	return out
}

func TestDefaultRedisImage_IsValkeyPinnedByDigest(t *testing.T) {
	if !regexp.MustCompile(`^docker\.io/valkey/valkey:[0-9.]+-alpine@sha256:[0-9a-f]{64}$`).MatchString(DefaultRedisImage) {
		t.Errorf("DefaultRedisImage = %q, want a fully qualified Valkey reference pinned by digest", DefaultRedisImage)
	}
}

func TestRedisImage_SpecThenOperatorThenDefault(t *testing.T) {
	fs := base()
	image := func(in Inputs) string {
		return typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec.Containers[0].Image
	}
	if got := image(Inputs{}); got != DefaultRedisImage {
		t.Errorf("no override: %q", got)
	}
	if got := image(Inputs{RedisImage: "mirror.example/valkey@sha256:aa"}); got != "mirror.example/valkey@sha256:aa" {
		t.Errorf("--redis-image: %q", got)
	}
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{Image: "own/redis:7.2"}
	if got := image(Inputs{RedisImage: "mirror.example/valkey@sha256:aa"}); got != "own/redis:7.2" {
		t.Errorf("spec.redis.managed.image must win over --redis-image: %q", got)
	}
}

// A managed store that Redis 7.4 wrote (the default before Valkey) keeps Redis 7.4: Valkey 8 cannot read
// its files (RDB format 12), so an operator upgrade must not switch it. A new store, or one that runs
// another image, gets the default; the spec and --redis-image still choose.
func TestRedisImage_AStoreOnTheLegacyRedisKeepsIt(t *testing.T) {
	fs := base()
	image := func(in Inputs) string {
		return typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec.Containers[0].Image
	}
	for _, c := range []struct {
		name string
		in   Inputs
		want string
	}{
		{"running the legacy Redis", Inputs{RunningRedisImage: LegacyRedisImage}, LegacyRedisImage},
		{"running the legacy Redis, the flag at its default", Inputs{RunningRedisImage: LegacyRedisImage, RedisImage: DefaultRedisImage}, LegacyRedisImage},
		{"running the legacy Redis, the flag names a mirror", Inputs{RunningRedisImage: LegacyRedisImage, RedisImage: "mirror.example/redis@sha256:bb"}, "mirror.example/redis@sha256:bb"},
		{"running Valkey", Inputs{RunningRedisImage: DefaultRedisImage}, DefaultRedisImage},
		{"running another Redis", Inputs{RunningRedisImage: "redis:7.2-alpine"}, DefaultRedisImage},
		{"a new store", Inputs{}, DefaultRedisImage},
		{"the StatefulSet gone, its claim in RDB format 12", Inputs{StoreRDBFormat: 12}, LegacyRedisImage},
		{"the StatefulSet gone, its claim in RDB format 11", Inputs{StoreRDBFormat: 11}, DefaultRedisImage},
		{"a claim in a format neither reads", Inputs{StoreRDBFormat: 80}, DefaultRedisImage},
	} {
		if got := image(c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{Image: DefaultRedisImage}
	if got := image(Inputs{RunningRedisImage: LegacyRedisImage}); got != DefaultRedisImage {
		t.Errorf("the spec asks for Valkey: %q", got)
	}
}

// D92: the operator's Redis image arrives with the FormsService's upgrade. While the upgrade waits (a
// slot, an approval, a window), or when the FormsService pins spec.image, the store keeps the image it
// runs; the spec still chooses, and a new store gets the operator's.
func TestRedisImage_KeptWhileTheUpgradeWaitsOrThePlatformIsPinned(t *testing.T) {
	fs := base()
	image := func(in Inputs) string {
		return typed[appsv1.StatefulSet](t, RedisStatefulSet(fs, in)).Spec.Template.Spec.Containers[0].Image
	}
	const running, next = "mirror.example/redis:7.0-a", "mirror.example/redis:7.0-b"
	for _, c := range []struct {
		name string
		in   Inputs
		want string
	}{
		{"kept: the running image, not the flag's", Inputs{KeepRunningRedisImage: true, RunningRedisImage: running, RedisImage: next}, running},
		{"kept: the running image, not the default", Inputs{KeepRunningRedisImage: true, RunningRedisImage: running}, running},
		{"kept: a new store gets the flag's", Inputs{KeepRunningRedisImage: true, RedisImage: next}, next},
		{"not kept: the flag's", Inputs{RunningRedisImage: running, RedisImage: next}, next},
	} {
		if got := image(c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{Image: "own/redis:7.2"}
	if got := image(Inputs{KeepRunningRedisImage: true, RunningRedisImage: running, RedisImage: next}); got != "own/redis:7.2" {
		t.Errorf("spec.redis.managed.image must win over the kept image: %q", got)
	}
}

func TestPods_NameNoUserUnlessAsked(t *testing.T) {
	fs := base()
	for c, p := range podsOfFS(t, fs, Inputs{Image: "img:1"}) {
		sc := p.SecurityContext
		if !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: not restricted: %+v", c, sc)
		}
		if sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil {
			t.Errorf("%s: a fixed user without being asked: %+v", c, sc)
		}
		for _, v := range p.Volumes {
			if v.Secret != nil && *v.Secret.DefaultMode != 0o444 {
				t.Errorf("%s: Secret volume %s mode %o: without an fsGroup the (image's) user could not read it", c, v.Name, *v.Secret.DefaultMode)
			}
		}
	}

	// Asked: the services by spec.runAsUser, Redis by the operator's flag or its own field.
	fs.Spec.RunAsUser = ptr.To[int64](1000)
	pods := podsOfFS(t, fs, Inputs{Image: "img:1", RedisRunAsUser: ptr.To[int64](DefaultRedisUID)})
	for _, c := range Components {
		sc := pods[c].SecurityContext
		if ptr.Deref(sc.RunAsUser, 0) != 1000 || ptr.Deref(sc.FSGroup, 0) != 1000 {
			t.Errorf("%s: spec.runAsUser 1000 gave %+v", c, sc)
		}
	}
	if sc := pods[Redis].SecurityContext; ptr.Deref(sc.RunAsUser, 0) != DefaultRedisUID || ptr.Deref(sc.FSGroup, 0) != DefaultRedisUID {
		t.Errorf("redis with --redis-run-as-user: %+v", sc)
	}
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{RunAsUser: ptr.To[int64](0)}
	if sc := podsOfFS(t, fs, Inputs{RedisRunAsUser: ptr.To[int64](DefaultRedisUID)})[Redis].SecurityContext; sc.RunAsUser != nil || sc.FSGroup != nil {
		t.Errorf("redis.managed.runAsUser 0 must name no user: %+v", sc)
	}
}

func TestPods_RunAsServiceAccountsOfTheirOwnWithoutTokens(t *testing.T) {
	fs := base()
	for c, p := range podsOfFS(t, fs, Inputs{Image: "img:1"}) {
		if p.ServiceAccountName != "acme-"+c || ptr.Deref(p.AutomountServiceAccountToken, true) {
			t.Errorf("%s: serviceAccountName %q, automount %v", c, p.ServiceAccountName, p.AutomountServiceAccountToken)
		}
		sa := typed[corev1.ServiceAccount](t, ServiceAccount(fs, c))
		if sa.Name != p.ServiceAccountName || sa.Namespace != "prod" || ptr.Deref(sa.AutomountServiceAccountToken, true) {
			t.Errorf("%s: ServiceAccount %+v", c, sa)
		}
		if len(sa.OwnerReferences) != 1 || !ptr.Deref(sa.OwnerReferences[0].Controller, false) || sa.Labels[LabelManagedBy] != ManagedBy {
			t.Errorf("%s: ServiceAccount not owned and labelled: %+v", c, sa.ObjectMeta)
		}
	}
}

func TestPods_OperatorPullSecretsFirstThenTheSpecs(t *testing.T) {
	fs := base()
	fs.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "team"}, {Name: "mirror"}}
	for c, p := range podsOfFS(t, fs, Inputs{Image: "img:1", ImagePullSecrets: []string{"mirror", "ops"}}) {
		var got []string
		for _, s := range p.ImagePullSecrets {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, []string{"mirror", "ops", "team"}) {
			t.Errorf("%s: imagePullSecrets %v, want [mirror ops team]", c, got)
		}
	}
}
