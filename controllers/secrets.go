package controllers

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// newSigningKey generates an EC P-256 key as a PKCS#8 PEM block ("PRIVATE KEY") and its RFC 7638
// JWK thumbprint.
func newSigningKey() (pemBytes []byte, keyID string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, "", err
	}
	kid, err := thumbprint(&key.PublicKey)
	if err != nil {
		return nil, "", err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), kid, nil
}

// newMFAKey is the key that seals TOTP secrets: 32 random bytes in base64, as mfa.secretKeyFile reads it.
func newMFAKey() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(b)), nil
}

// thumbprint is the RFC 7638 JWK thumbprint of a P-256 public key (base64url, no padding).
func thumbprint(pub *ecdsa.PublicKey) (string, error) {
	ek, err := pub.ECDH()
	if err != nil {
		return "", err
	}
	raw := ek.Bytes() // 0x04 || X || Y, 32 bytes each
	b64 := base64.RawURLEncoding.EncodeToString
	// Members in lexicographic order, no whitespace, as RFC 7638 requires.
	canonical := fmt.Sprintf(`{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}`, b64(raw[1:33]), b64(raw[33:65]))
	sum := sha256.Sum256([]byte(canonical))
	return b64(sum[:]), nil
}

// ensureRedisPassword creates the managed Redis's password Secret once and never rewrites it.
func (r *FormsServiceReconciler) ensureRedisPassword(ctx context.Context, fs *v1alpha1.FormsService) (*corev1.Secret, bool, error) {
	name := render.NamesOf(fs).RedisPassword
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: fs.Namespace, Name: name}, sec)
	if err == nil || !apierrors.IsNotFound(err) {
		return sec, false, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, false, err
	}
	password := hex.EncodeToString(b)
	sec = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fs.Namespace, Labels: render.Labels(fs, render.Redis)},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			render.RedisPasswordKey:    []byte(password),
			render.RedisRequirePassKey: []byte("requirepass " + password + "\n"),
		},
	}
	if err := controllerutil.SetControllerReference(fs, sec, r.Scheme); err != nil {
		return nil, false, err
	}
	if err := r.Client.Create(ctx, sec); err != nil {
		return nil, false, err
	}
	return sec, true, nil
}

// checkSecrets reads every Secret the pods will mount, reports the ones that are missing or lack a key,
// and digests the mounted keys so that a changed Secret rolls the pods that read it.
func (r *FormsServiceReconciler) checkSecrets(ctx context.Context, fs *v1alpha1.FormsService, owned ...*corev1.Secret) (map[string]string, []problem, error) {
	digests := map[string]string{}
	for _, s := range owned {
		if s != nil && s.Name != "" {
			digests[s.Name] = digestSecret(s, nil)
		}
	}
	keys := map[string][]string{}
	var order []string
	var problems []problem
	refs := render.UserSecretRefs(fs)
	for _, ref := range refs {
		if _, seen := keys[ref.Secret]; !seen {
			order = append(order, ref.Secret)
		}
		keys[ref.Secret] = append(keys[ref.Secret], ref.Key)
	}
	secrets := map[string]*corev1.Secret{}
	for _, name := range order {
		sec := &corev1.Secret{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: fs.Namespace, Name: name}, sec)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		secrets[name] = sec
		digests[name] = digestSecret(sec, keys[name])
	}
	for _, ref := range refs {
		sec, ok := secrets[ref.Secret]
		switch {
		case !ok:
			reason := "SecretMissing"
			switch {
			case ref.Field == "spec.redis.passwordSecretRef":
				reason = "RedisPasswordSecretMissing"
			case strings.HasPrefix(ref.Field, "spec.auth.connectors["):
				reason = "ConnectorSecretMissing"
			}
			problems = append(problems, problem{Reason: reason, Message: fmt.Sprintf(
				"Secret %q named by %s does not exist in namespace %s", ref.Secret, ref.Field, fs.Namespace)})
		case len(sec.Data[ref.Key]) == 0 && strings.HasPrefix(ref.Field, "spec.auth.connectors["):
			problems = append(problems, problem{Reason: "ConnectorSecretMissing", Message: fmt.Sprintf(
				"Secret %q named by %s has no key %q", ref.Secret, ref.Field, ref.Key)})
		case len(sec.Data[ref.Key]) == 0:
			problems = append(problems, problem{Reason: "SecretKeyMissing", Message: fmt.Sprintf(
				"Secret %q named by %s has no key %q", ref.Secret, ref.Field, ref.Key)})
		case ref.Check != nil:
			// The service would refuse to start with this value: say so here rather than in a crash loop.
			if err := ref.Check(sec.Data[ref.Key]); err != nil {
				problems = append(problems, problem{Reason: "SecretValueInvalid", Message: fmt.Sprintf(
					"Secret %q key %q named by %s: %v", ref.Secret, ref.Key, ref.Field, err)})
			}
		}
	}
	dataProblems, err := checkDataSecrets(ctx, r.APIReader, fs)
	if err != nil {
		return nil, nil, err
	}
	filesProblems, err := checkFilesSecret(ctx, r.APIReader, fs, digests)
	if err != nil {
		return nil, nil, err
	}
	return digests, append(append(problems, dataProblems...), filesProblems...), nil
}

// checkFilesSecret reads the credentials Secret of spec.forms.files' bucket. The forms pods get it
// through envFrom, optional to the pod (without it only the forms with file fields fail, not every
// form), so nothing else would say it is missing until the first upload answers 502: a missing Secret,
// or one without the keys the forms service needs (render.FilesCredentialKeys), is
// FilesCredentialsMissing now, naming the field and the keys, never a value. Its digest goes into the
// forms pods' restart hash: an environment from a Secret is read at start only, so a Secret created or
// fixed later rolls them.
func checkFilesSecret(ctx context.Context, reader client.Reader, fs *v1alpha1.FormsService, digests map[string]string) ([]problem, error) {
	f := fs.Spec.Forms.Files
	if f == nil {
		return nil, nil
	}
	name, field := f.S3.CredentialsSecretRef.Name, "spec.forms.files.s3.credentialsSecretRef"
	sec := &corev1.Secret{}
	err := reader.Get(ctx, types.NamespacedName{Namespace: fs.Namespace, Name: name}, sec)
	switch {
	case apierrors.IsNotFound(err):
		return []problem{{Reason: "FilesCredentialsMissing", Message: fmt.Sprintf(
			"Secret %q named by %s does not exist in namespace %s: the forms with file fields answer 502 until it does", name, field, fs.Namespace)}}, nil
	case err != nil:
		return nil, err
	}
	digests[render.FilesCredentialsDigestKey(fs)] = digestSecret(sec, nil)
	var missing []string
	for _, k := range render.FilesCredentialKeys {
		if len(bytes.TrimSpace(sec.Data[k])) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return []problem{{Reason: "FilesCredentialsMissing", Message: fmt.Sprintf(
			"Secret %q named by %s has no %s: the forms with file fields answer 502 until it has", name, field, strings.Join(missing, " and "))}}, nil
	}
	return nil, nil
}

// checkDataSecrets reads the Secrets the backup and restore Jobs will read (render.DataSecretRefs): a
// missing one, a missing key or a key the CLI would refuse is BackupCredentialsMissing now, not a Job
// that fails an hour later. They are not digested: no service mounts them.
func checkDataSecrets(ctx context.Context, reader client.Reader, fs *v1alpha1.FormsService) ([]problem, error) {
	var problems []problem
	for _, ref := range render.DataSecretRefs(fs) {
		sec := &corev1.Secret{}
		err := reader.Get(ctx, types.NamespacedName{Namespace: fs.Namespace, Name: ref.Secret}, sec)
		var msg string
		switch {
		case apierrors.IsNotFound(err):
			msg = fmt.Sprintf("Secret %q named by %s does not exist in namespace %s", ref.Secret, ref.Field, fs.Namespace)
		case err != nil:
			return nil, err
		case ref.Key == "":
			continue // the whole Secret is passed (envFrom): that it exists is what can be checked
		case len(sec.Data[ref.Key]) == 0:
			msg = fmt.Sprintf("Secret %q named by %s has no key %q", ref.Secret, ref.Field, ref.Key)
		case ref.Check != nil:
			if err := ref.Check(sec.Data[ref.Key]); err != nil {
				msg = fmt.Sprintf("Secret %q key %q named by %s: %v", ref.Secret, ref.Key, ref.Field, err)
			}
		}
		if msg != "" {
			problems = append(problems, problem{Reason: "BackupCredentialsMissing", Message: msg})
		}
	}
	return problems, nil
}

// digestSecret digests the given keys of a Secret (nil: all keys). Only the digest leaves this function.
func digestSecret(s *corev1.Secret, keys []string) string {
	if keys == nil {
		for k := range s.Data {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%d\x00", k, len(s.Data[k]))
		h.Write(s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// DefaultSecretRecheck is how often a FormsService is reconciled again to notice a changed Secret.
const DefaultSecretRecheck = time.Minute

// missingSecretRecheck is how soon a FormsService that waits for a Secret looks again.
const missingSecretRecheck = 10 * time.Second

// secretRecheck is when the reconcile should run again for the Secrets it read. The operator does not
// watch Secrets (least privilege: it may only get them by name), so a Secret created, fixed or changed
// after the reconcile is noticed here: soon when one was missing or wrong, else every SecretRecheck.
// Either is stretched by a random part of up to a tenth (jitter): FormsServices reconciled together (all
// of them when the operator starts) would otherwise come back in the same second, every interval, for
// ever; spread, a thousand of them cost the API server an even trickle of reads.
func (r *FormsServiceReconciler) secretRecheck(problems []problem) time.Duration {
	every := r.SecretRecheck
	if every <= 0 {
		every = DefaultSecretRecheck
	}
	for _, p := range problems {
		switch p.Reason {
		case "SecretMissing", "RedisPasswordSecretMissing", "SecretKeyMissing", "SecretValueInvalid", "SigningKeyMissing",
			"SigningKeyVanished", "SigningKeySecretMissing", "SigningKeyInvalid", "BackupCredentialsMissing", "ConnectorSecretMissing",
			"FilesCredentialsMissing":
			return wait.Jitter(min(every, missingSecretRecheck), recheckJitter)
		}
	}
	return wait.Jitter(every, recheckJitter)
}

// recheckJitter is the largest part of the recheck interval added at random.
const recheckJitter = 0.1

// minPositive is the smaller of two durations, ignoring zeros (no requeue).
func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
