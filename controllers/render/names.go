// Package render builds, from a FormsService, every object the operator wants to exist: the rendered
// service configuration, Deployments, Services, the Ingress and the managed Redis. The functions are pure
// (no API calls, no clock, no randomness) so that table tests can check each object, and the reconciler
// only compares and applies what they return.
package render

import (
	"fmt"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// The three services, in the order they are applied.
const (
	Forms  = "forms"
	Auth   = "auth"
	Health = "health"
	Redis  = "redis"
)

// Components are the services every FormsService runs.
var Components = []string{Forms, Auth, Health}

// Where things live inside the pods.
const (
	ConfigDir  = "/etc/formsservice"
	ConfigPath = ConfigDir + "/config.yaml"
	// SecretsDir holds one folder per mounted Secret: SecretsDir/<secret name>/<key>.
	SecretsDir = "/var/run/secrets/formsservice"
	HTTPPort   = 8080
	// ServicePort is the port of each service's Service (the ingress backend).
	ServicePort = 80
	RedisPort   = 6379
	// DrainDelay is how long a terminating pod keeps serving while /readyz says it is going away, so
	// that endpoints and the ingress stop sending to it before the listener closes.
	DrainDelay = "5s"
)

// Keys of the signing-key Secret and the managed Redis password Secret.
const (
	SigningKeyKey         = "signing-key.pem"
	PreviousSigningKeyKey = "previous-signing-key.pem"
	// NextSigningKeyKey holds, during a rotation, the key that is published before it signs.
	NextSigningKeyKey = "next-signing-key.pem"
	// MFAKeyKey holds the key that seals the TOTP secrets (32 random bytes in base64), generated with
	// the signing key so that it is kept, moved and restored with it.
	MFAKeyKey        = "mfa-secret-key"
	RedisPasswordKey = "password"
	// RedisRequirePassKey holds "requirepass <password>", included by the managed redis.conf so that the
	// password never appears in a command line or an environment variable of the Redis container.
	RedisRequirePassKey = "requirepass.conf"
)

// Labels and annotations the operator writes.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "formsservice-operator"

	// RestartHashAnnotation on a pod template changes when something the service reads only at start-up
	// changes (Redis settings, keys, a mounted Secret), which rolls the Deployment. Allowed origins and
	// OAuth clients are left out: the services reload them live from the mounted ConfigMap.
	RestartHashAnnotation = "platform.formsservice.io/restart-hash"
	// RotatedForAnnotation on the signing-key Secret records the rotate-signing-key value it answers.
	RotatedForAnnotation = "platform.formsservice.io/rotated-for"
	// KeyIDAnnotation on the signing-key Secret is the RFC 7638 thumbprint of the current key, for people.
	KeyIDAnnotation = "platform.formsservice.io/key-id"
	// SigningKeysAnnotation on the auth pod template names the keys its pods load, by role and key ID
	// ("current=…,previous=…,next=…"): once the Deployment has rolled it out, every auth pod serves them.
	SigningKeysAnnotation = "platform.formsservice.io/signing-keys"

	// The signing-key Secret's rotation record (RFC 3339 times): when its current key began to sign,
	// when the next key was written and when every auth pod served it, and when every auth pod signed
	// with the promoted key (the previous key's retention counts from then).
	CurrentSinceAnnotation      = "platform.formsservice.io/current-since"
	NextPublishedAtAnnotation   = "platform.formsservice.io/next-published-at"
	NextServedAtAnnotation      = "platform.formsservice.io/next-served-at"
	PromotionServedAtAnnotation = "platform.formsservice.io/promotion-served-at"
)

// Names of the objects a FormsService owns.
type Names struct {
	ConfigMap string
	// SigningKey is the Secret of the signing keys: the one spec.auth.signingKeySecretRef names, else the
	// one the operator generates.
	SigningKey     string
	RedisPassword  string
	Redis          string
	RedisConfigMap string
	Ingress        string
}

// NamesOf returns the names of the objects fs owns. The CRD limits fs's name to 40 characters, so every
// name here stays a valid DNS label.
func NamesOf(fs *v1alpha1.FormsService) Names {
	n := fs.Name
	return Names{
		ConfigMap:      n + "-config",
		SigningKey:     signingKeySecret(fs),
		RedisPassword:  n + "-redis-password",
		Redis:          n + "-redis",
		RedisConfigMap: n + "-redis-config",
		Ingress:        n,
	}
}

// signingKeySecret is the Secret the auth pods read their signing keys from: spec.auth.signingKeySecretRef,
// else <name>-signing-key, which the operator generates (D53).
func signingKeySecret(fs *v1alpha1.FormsService) string {
	if ref := fs.Spec.Auth.SigningKeySecretRef; ref != nil {
		return ref.Name
	}
	return fs.Name + "-signing-key"
}

// WorkloadName is the name of a component's Deployment (or StatefulSet) and Service.
func WorkloadName(fs *v1alpha1.FormsService, component string) string {
	return fs.Name + "-" + component
}

// ServiceURL is the in-cluster base URL of a component's Service.
func ServiceURL(fs *v1alpha1.FormsService, component string) string {
	return fmt.Sprintf("http://%s.%s.svc", WorkloadName(fs, component), fs.Namespace)
}

// SelectorLabels select a component's pods; they never change, since a Deployment's selector is immutable.
func SelectorLabels(fs *v1alpha1.FormsService, component string) map[string]string {
	return map[string]string{
		LabelName:      "formsservice",
		LabelInstance:  fs.Name,
		LabelComponent: component,
	}
}

// Labels are put on every object: the selector labels plus part-of and managed-by.
func Labels(fs *v1alpha1.FormsService, component string) map[string]string {
	l := SelectorLabels(fs, component)
	l[LabelPartOf] = "formsservice"
	l[LabelManagedBy] = ManagedBy
	return l
}

// ManagedRedis reports whether the operator runs Redis for fs (no external addresses given).
func ManagedRedis(fs *v1alpha1.FormsService) bool {
	return len(fs.Spec.Redis.Addresses) == 0
}

// PublicURL is the platform's base URL and OAuth issuer: spec.publicURL, else https://<ingress host>,
// else https://<gateway host>.
func PublicURL(fs *v1alpha1.FormsService) string {
	if fs.Spec.PublicURL != "" {
		return fs.Spec.PublicURL
	}
	if fs.Spec.Ingress != nil && fs.Spec.Ingress.Host != "" {
		return "https://" + fs.Spec.Ingress.Host
	}
	if fs.Spec.Gateway != nil && fs.Spec.Gateway.Host != "" {
		return "https://" + fs.Spec.Gateway.Host
	}
	return ""
}
