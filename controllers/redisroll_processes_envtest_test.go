package controllers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/redisha"
)

// loopbackSets maps a test's namespace to the Redis processes its FormsService's highly available
// Redis stands for (suite_test.go's RedisHAAddrs).
var loopbackSets sync.Map

// loopbackSet is three "Redis pods" on loopback, each a redis-server and a sentinel started from the
// files redisha.Write wrote, as the pods' init step does.
type loopbackSet struct {
	t                *testing.T
	password         string
	nodes, sentinels []string
	dirs             []string
	redis, sentinel  []*testproc.Process
}

func startLoopbackSet(t *testing.T, password string) *loopbackSet {
	s := &loopbackSet{t: t, password: password, redis: make([]*testproc.Process, 3), sentinel: make([]*testproc.Process, 3)}
	for range 3 {
		s.nodes = append(s.nodes, "127.0.0.1:"+strconv.Itoa(testredis.FreePort(t)))
		s.sentinels = append(s.sentinels, "127.0.0.1:"+strconv.Itoa(testredis.FreePort(t)))
		dir := t.TempDir()
		s.dirs = append(s.dirs, dir)
		base := fmt.Sprintf("bind 127.0.0.1\ndir %s\nappendonly yes\nappendfsync always\nsave \"\"\nrequirepass %s\nrepl-diskless-sync-delay 0\nlogfile \"\"\n", dir, password)
		if err := os.WriteFile(filepath.Join(dir, "base.conf"), []byte(base), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "ha"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s.start(0, 1, 2)
	return s
}

// start runs the pods' init steps at once, then each pod's Redis and sentinel.
func (s *loopbackSet) start(pods ...int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for _, i := range pods {
		wg.Go(func() {
			n := redisha.Node{Nodes: s.nodes, Sentinels: s.sentinels, Self: i, MasterName: render.RedisHAMasterName, Password: s.password,
				DownAfter: 3 * time.Second, FailoverTimeout: 20 * time.Second,
				Include: filepath.Join(s.dirs[i], "base.conf"), Dir: filepath.Join(s.dirs[i], "ha")}
			if _, err := redisha.Write(ctx, n, n.Dir); err != nil {
				errs[i] = err
				return
			}
			s.run(i)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.t.Fatal(err)
	}
}

func (s *loopbackSet) run(i int) {
	dir := filepath.Join(s.dirs[i], "ha")
	bin := testredis.Binary(s.t)
	s.redis[i] = testproc.Start(s.t, nil, bin, filepath.Join(dir, "redis.conf"))
	s.sentinel[i] = testproc.Start(s.t, nil, bin, filepath.Join(dir, "sentinel.conf"), "--sentinel")
	for _, a := range []string{s.nodes[i], s.sentinels[i]} {
		c := redis.NewClient(&redis.Options{Addr: a, Password: s.password, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		testwait.Until(s.t, 20*time.Second, a+" to answer PING", func() error { return c.Ping(context.Background()).Err() })
		c.Close()
	}
}

func (s *loopbackSet) kill(i int) {
	s.redis[i].Kill()
	s.sentinel[i].Kill()
}

// role is node i's ROLE, and for a replica the primary it follows.
func (s *loopbackSet) role(i int) string {
	c := redis.NewClient(&redis.Options{Addr: s.nodes[i], Password: s.password, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	r, err := c.Do(context.Background(), "ROLE").Slice()
	if err != nil || len(r) == 0 {
		return fmt.Sprint(err)
	}
	return fmt.Sprint(r[0])
}

// The operator rolls a highly available Redis of real redis-server and Sentinel processes (its pods
// played by hand, as envtest runs no StatefulSet controller or kubelet): it deletes the replicas first,
// one at a time, each only once the one before is back and in sync, hands the primary over, and deletes
// the old primary's pod last, once it is a replica.
func TestRedisHARoll_RealProcesses_ReplicasFirstThenTheHandedOverPrimary(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	fs = createAndWait(t, fs)
	var secret corev1.Secret
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis-password"), &secret) })
	set := startLoopbackSet(t, string(secret.Data[render.RedisPasswordKey]))
	loopbackSets.Store(ns, set)
	t.Cleanup(func() { loopbackSets.Delete(ns) })

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), sts) })
	updated := 0
	// The StatefulSet controller's and the kubelet's part: pod i on revision rev, Ready, and the set's
	// status counting the updated pods.
	makePod := func(i int, rev string) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("acme-redis-%d", i), Labels: render.SelectorLabels(fs, render.Redis)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis"}}}}
		pod.Labels[appsv1.ControllerRevisionHashLabelKey] = rev
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		updateStatusOf(t, pod, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		})
	}
	setStatus := func() {
		updateStatusOf(t, sts, func(s *appsv1.StatefulSet) {
			s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
				UpdatedReplicas: int32(updated), CurrentRevision: "acme-redis-old", UpdateRevision: "acme-redis-new"}
		})
	}
	for i := range 3 {
		makePod(i, "acme-redis-old")
	}
	setStatus()

	var deleted []string
	for len(deleted) < 3 {
		var gone int
		testwait.Until(t, 90*time.Second, fmt.Sprintf("the operator's deletion no. %d", len(deleted)+1), func() error {
			for i := range 3 {
				err := k8s.Get(ctx, key(ns, fmt.Sprintf("acme-redis-%d", i)), &corev1.Pod{})
				if apierrors.IsNotFound(err) {
					gone = i
					return nil
				}
			}
			return errors.New("no pod deleted yet")
		})
		deleted = append(deleted, fmt.Sprintf("acme-redis-%d", gone))
		// Its Redis was a replica when its pod went: the primary's pod only once it was handed over.
		if r := set.role(gone); r != "slave" {
			t.Fatalf("acme-redis-%d deleted while its Redis answers ROLE %s", gone, r)
		}
		set.kill(gone)
		set.start(gone)
		makePod(gone, "acme-redis-new")
		updated++
		setStatus()
	}
	if want := []string{"acme-redis-2", "acme-redis-1", "acme-redis-0"}; strings.Join(deleted, ",") != strings.Join(want, ",") {
		t.Fatalf("deleted %v, want %v (the replicas first, the primary acme-redis-0 last)", deleted, want)
	}
	eventually(t, func() error { return hasEvent(ns, "acme", "RedisHASwitchover", "Handed the primary acme-redis-0 over") })
}
