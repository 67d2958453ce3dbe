// Package objectstore puts and gets whole objects in an S3-compatible bucket (AWS S3, versitygw, SeaweedFS,
// Ceph RGW, Garage, MinIO…) through minio-go, the small, maintained S3 client: where a backup goes.
//
// A location is s3://BUCKET/KEY. The endpoint and the credentials come from the environment the AWS
// tools use, so a Kubernetes Secret of the usual shape works as it is:
// AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL; https://s3.amazonaws.com when neither is set; an http://
// endpoint is plain text, for a bucket inside the cluster), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION, AWS_CA_BUNDLE (a PEM file of the CAs an https endpoint's certificate
// is checked against instead of the system's).
//
// Without static keys, AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (what EKS's IRSA and other
// workload identities set) trade the pod's projected service-account token for temporary keys at STS
// (AssumeRoleWithWebIdentity; AWS_ENDPOINT_URL_STS, else the region's STS endpoint), renewed before
// they expire. FORMSSERVICE_S3_SSE asks the server to encrypt what is uploaded: AES256 (SSE-S3) or
// aws:kms (SSE-KMS, with the key FORMSSERVICE_S3_SSE_KMS_KEY_ID, else the bucket's default key).
package objectstore

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

// Location is one object: its bucket and key.
type Location struct {
	Bucket, Key string
}

func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Key }

// IsLocation says whether s names an object (s3://…) rather than a file.
func IsLocation(s string) bool { return strings.HasPrefix(s, "s3://") }

// ParseLocation reads s3://BUCKET/KEY.
func ParseLocation(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	bucket, key, _ := strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return Location{}, fmt.Errorf("%q is not an object location: use s3://BUCKET/KEY", s)
	}
	return Location{Bucket: bucket, Key: key}, nil
}

// Env is how the client reads its settings (os.Getenv, or a test's map).
type Env func(string) string

// Client talks to one endpoint.
type Client struct {
	mc *minio.Client
	// sse is the server-side encryption every upload asks for; nil: the bucket's default.
	sse encrypt.ServerSide
}

// New builds a client from the environment (see the package comment).
func New(env Env) (*Client, error) {
	raw := env("AWS_ENDPOINT_URL_S3")
	if raw == "" {
		raw = env("AWS_ENDPOINT_URL")
	}
	if raw == "" {
		raw = "https://s3.amazonaws.com"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("the S3 endpoint %q is not http(s)://HOST[:PORT]", raw)
	}
	transport, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	if file := env("AWS_CA_BUNDLE"); file != "" {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("AWS_CA_BUNDLE is set, but the S3 endpoint %q is not https", raw)
		}
		pool, err := readCABundle(file)
		if err != nil {
			return nil, err
		}
		transport.TLSClientConfig.RootCAs = pool
	}
	creds, err := credentialsOf(env, &http.Client{Transport: transport})
	if err != nil {
		return nil, err
	}
	sse, err := serverSideEncryption(env)
	if err != nil {
		return nil, err
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:     creds,
		Secure:    u.Scheme == "https",
		Transport: transport,
		Region:    env("AWS_REGION"),
		// Path-style requests (endpoint/bucket/key) work with every S3-compatible server, and with a
		// bucket name that is not a valid host name.
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, err
	}
	return &Client{mc: mc, sse: sse}, nil
}

// readCABundle reads the PEM certificates of AWS_CA_BUNDLE; a file without one is an error, not a
// pool that trusts nothing (or, worse, a silent fall back to the system's).
func readCABundle(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("AWS_CA_BUNDLE %s holds no PEM certificate", file)
	}
	return pool, nil
}

// credentialsOf picks the credentials: static keys when set, else a web identity; neither is an error
// that names both. The STS requests go through client (the CA bundle applies to a private STS too).
func credentialsOf(env Env, client *http.Client) (*credentials.Credentials, error) {
	id, secret := env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")
	tokenFile, role := env("AWS_WEB_IDENTITY_TOKEN_FILE"), env("AWS_ROLE_ARN")
	switch {
	case id != "" || secret != "":
		if id == "" || secret == "" {
			return nil, errors.New("S3 credentials need both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
		}
		return credentials.NewStaticV4(id, secret, env("AWS_SESSION_TOKEN")), nil
	case tokenFile != "" && role != "":
		return credentials.NewSTSWebIdentity(stsEndpoint(env), func() (*credentials.WebIdentityToken, error) {
			// Read at every renewal: the kubelet replaces the projected token before it expires.
			token, err := os.ReadFile(tokenFile)
			if err != nil {
				return nil, fmt.Errorf("AWS_WEB_IDENTITY_TOKEN_FILE: %w", err)
			}
			return &credentials.WebIdentityToken{Token: strings.TrimSpace(string(token))}, nil
		}, func(i *credentials.STSWebIdentity) {
			i.RoleARN = role
			i.Client = client
		})
	case tokenFile != "" || role != "":
		return nil, errors.New("a web identity needs both AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN")
	default:
		return nil, errors.New("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN")
	}
}

// stsEndpoint is where a web identity is traded for keys: AWS_ENDPOINT_URL_STS as the AWS tools read
// it, else the region's STS (as minio-go's own IAM provider does), else the global one.
func stsEndpoint(env Env) string {
	if e := env("AWS_ENDPOINT_URL_STS"); e != "" {
		return e
	}
	switch region := env("AWS_REGION"); {
	case strings.HasPrefix(region, "cn-"):
		return "https://sts." + region + ".amazonaws.com.cn"
	case region != "":
		return "https://sts." + region + ".amazonaws.com"
	}
	return credentials.DefaultSTSRoleEndpoint
}

// SSE values of FORMSSERVICE_S3_SSE, as S3's x-amz-server-side-encryption header spells them.
const (
	SSES3  = "AES256"
	SSEKMS = "aws:kms"
)

// serverSideEncryption reads FORMSSERVICE_S3_SSE and FORMSSERVICE_S3_SSE_KMS_KEY_ID.
func serverSideEncryption(env Env) (encrypt.ServerSide, error) {
	mode, key := env("FORMSSERVICE_S3_SSE"), env("FORMSSERVICE_S3_SSE_KMS_KEY_ID")
	switch {
	case key != "" && mode != SSEKMS:
		return nil, fmt.Errorf("FORMSSERVICE_S3_SSE_KMS_KEY_ID needs FORMSSERVICE_S3_SSE=%s", SSEKMS)
	case mode == "":
		return nil, nil
	case mode == SSES3:
		return encrypt.NewSSE(), nil
	case mode == SSEKMS:
		return encrypt.NewSSEKMS(key, nil)
	}
	return nil, fmt.Errorf("FORMSSERVICE_S3_SSE %q is neither %s nor %s", mode, SSES3, SSEKMS)
}

// Put uploads r (size bytes; -1 when unknown, then in parts) as the object at l.
func (c *Client) Put(ctx context.Context, l Location, r io.Reader, size int64) error {
	_, err := c.mc.PutObject(ctx, l.Bucket, l.Key, r, size, minio.PutObjectOptions{ContentType: "application/gzip", ServerSideEncryption: c.sse})
	if err != nil {
		return fmt.Errorf("uploading %s: %w", l, err)
	}
	return nil
}

// Get downloads the object at l into w.
func (c *Client) Get(ctx context.Context, l Location, w io.Writer) (int64, error) {
	obj, err := c.mc.GetObject(ctx, l.Bucket, l.Key, minio.GetObjectOptions{})
	if err != nil {
		return 0, fmt.Errorf("downloading %s: %w", l, err)
	}
	defer obj.Close()
	n, err := io.Copy(w, obj)
	if err != nil {
		return n, fmt.Errorf("downloading %s: %w", l, err)
	}
	return n, nil
}

// EnsureBucket creates the bucket when it does not exist (a test's fresh server, a first backup).
func (c *Client) EnsureBucket(ctx context.Context, bucket string) error {
	ok, err := c.mc.BucketExists(ctx, bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	if ok {
		return nil
	}
	if err := c.mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		return fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	return nil
}

// Object is what PutStream stores besides the bytes: the type a download is served with, and
// metadata (x-amz-meta-*) kept with the object.
type Object struct {
	ContentType string
	Metadata    map[string]string
}

// StreamPartSize is the part size of a stream of unknown length: S3's smallest, so that an upload holds
// at most this much of a stream in memory (minio-go's default for an unknown length is hundreds of MB).
const StreamPartSize = 5 << 20

// PutStream uploads r, whose length is not known, as the object at l, holding at most StreamPartSize
// in memory. When r fails the upload fails, and a multipart upload begun is aborted: the object is
// only created once r has ended.
func (c *Client) PutStream(ctx context.Context, l Location, r io.Reader, o Object) error {
	_, err := c.mc.PutObject(ctx, l.Bucket, l.Key, r, -1, minio.PutObjectOptions{
		ContentType: o.ContentType, UserMetadata: o.Metadata, PartSize: StreamPartSize, ServerSideEncryption: c.sse})
	if err != nil {
		return fmt.Errorf("uploading %s: %w", l, err)
	}
	return nil
}

// Remove deletes the object at l; one that does not exist is no error (S3's DELETE).
func (c *Client) Remove(ctx context.Context, l Location) error {
	if err := c.mc.RemoveObject(ctx, l.Bucket, l.Key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("removing %s: %w", l, err)
	}
	return nil
}

// Stored is an object's size, type and metadata, as Open returns them.
type Stored struct {
	Size        int64
	ContentType string
	Metadata    map[string]string
}

// ErrNoObject is an object that does not exist (removed, or never stored).
var ErrNoObject = errors.New("no such object")

// Open returns the object at l to read, with what it was stored with; ErrNoObject when it does not exist.
func (c *Client) Open(ctx context.Context, l Location) (io.ReadCloser, Stored, error) {
	obj, err := c.mc.GetObject(ctx, l.Bucket, l.Key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Stored{}, fmt.Errorf("downloading %s: %w", l, err)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, Stored{}, ErrNoObject
		}
		return nil, Stored{}, fmt.Errorf("downloading %s: %w", l, err)
	}
	meta := map[string]string{}
	for k, v := range info.UserMetadata {
		meta[strings.ToLower(k)] = v
	}
	return obj, Stored{Size: info.Size, ContentType: info.ContentType, Metadata: meta}, nil
}

// List returns the keys under prefix (a test's or an operator's check that nothing was left behind).
func (c *Client) List(ctx context.Context, bucket, prefix string) ([]string, error) {
	var keys []string
	for o := range c.mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("listing s3://%s/%s: %w", bucket, prefix, o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys, nil
}
