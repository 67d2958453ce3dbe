// Package objectstore puts and gets whole objects in an S3-compatible bucket (AWS S3, versitygw, SeaweedFS,
// Ceph RGW, Garage, MinIO…) through minio-go, the small, maintained S3 client: where a backup goes.
//
// A location is s3://BUCKET/KEY. The endpoint and the credentials come from the environment the AWS
// tools use, so a Kubernetes Secret of the usual shape works as it is:
// AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL; https://s3.amazonaws.com when neither is set; an http://
// endpoint is plain text, for a bucket inside the cluster), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION.
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
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
	if env("AWS_ACCESS_KEY_ID") == "" || env("AWS_SECRET_ACCESS_KEY") == "" {
		return nil, errors.New("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")),
		Secure: u.Scheme == "https",
		Region: env("AWS_REGION"),
		// Path-style requests (endpoint/bucket/key) work with every S3-compatible server, and with a
		// bucket name that is not a valid host name.
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, err
	}
	return &Client{mc: mc}, nil
}

// Put uploads r (size bytes; -1 when unknown, then in parts) as the object at l.
func (c *Client) Put(ctx context.Context, l Location, r io.Reader, size int64) error {
	_, err := c.mc.PutObject(ctx, l.Bucket, l.Key, r, size, minio.PutObjectOptions{ContentType: "application/gzip"})
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
		ContentType: o.ContentType, UserMetadata: o.Metadata, PartSize: StreamPartSize})
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
