package controllers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// How the tests know that the operator has done what a change asked of it, without waiting a fixed time:
//
//   - a reconcile starts with the one read of its FormsService (Reconcile's first line), which the
//     reconciler's client, a reconcileProbe, records: which object, at which resourceVersion, and how
//     many writes the operator had sent by then (opWrites.Len, which a Reset does not change);
//   - a reconcile that has started has finished once controller-runtime's active-workers gauge of the
//     controller reads 0 (the gauge goes up before the reconcile starts and down after it returns);
//   - a reconcile's writes are the operator's writes in its namespace after its start.
var probe *reconcileProbe

// controllerName is the name SetupWithManager gives the controller: the label of its metrics.
const controllerName = "formsservice"

// reconcileStart is one reconcile's read of its FormsService.
type reconcileStart struct {
	seq      int    // reconciles started before it, of any object, plus one
	rv       int64  // the resourceVersion it read; 0 when the object was gone
	writesAt int    // opWrites.Len() when it started
	ns       string // the object's namespace: the writes that are its own
}

// reconcileProbe is the reconciler's client, recording each read of a FormsService.
type reconcileProbe struct {
	client.Client
	mu     sync.Mutex
	seq    int
	starts map[client.ObjectKey]reconcileStart // the latest of each object
}

func (p *reconcileProbe) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	fs, ok := obj.(*v1alpha1.FormsService)
	if !ok {
		return p.Client.Get(ctx, key, obj, opts...)
	}
	writesAt := opWrites.Len() // before the reconcile's first write
	err := p.Client.Get(ctx, key, obj, opts...)
	rv, _ := strconv.ParseInt(fs.ResourceVersion, 10, 64)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.starts == nil {
		p.starts = map[client.ObjectKey]reconcileStart{}
	}
	p.seq++
	p.starts[key] = reconcileStart{seq: p.seq, rv: rv, writesAt: writesAt, ns: key.Namespace}
	return err
}

// snapshot returns the count of reconciles started and the latest start of each object.
func (p *reconcileProbe) snapshot() (int, map[client.ObjectKey]reconcileStart) {
	p.mu.Lock()
	defer p.mu.Unlock()
	starts := make(map[client.ObjectKey]reconcileStart, len(p.starts))
	for k, s := range p.starts {
		starts[k] = s
	}
	return p.seq, starts
}

// operatorBusy says what the controller has queued (ready to run) or running, from its metrics; "" when
// nothing.
func operatorBusy() (string, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return "", err
	}
	var active, queued float64
	for _, f := range families {
		switch f.GetName() {
		case "controller_runtime_active_workers":
			active += sumFor(f, "controller", controllerName)
		case "workqueue_depth":
			queued += sumFor(f, "controller", controllerName)
		}
	}
	if active > 0 || queued > 0 {
		return fmt.Sprintf("%v reconciles running, %v queued", active, queued), nil
	}
	return "", nil
}

func sumFor(f *dto.MetricFamily, label, value string) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// writesIn returns the writes among ws in namespace ns, and those outside any namespace.
func writesIn(ws []string, ns string) []string {
	var out []string
	for _, w := range ws {
		if strings.Contains(w, "/namespaces/"+ns+"/") || !strings.Contains(w, "/namespaces/") {
			out = append(out, w)
		}
	}
	return out
}

// waitReconciled waits until a reconcile of fs that read fs's resourceVersion (or a later one) has
// finished: the operator has taken up the change that produced that version. It returns that
// reconcile's writes.
func waitReconciled(t *testing.T, fs *v1alpha1.FormsService) []string {
	t.Helper()
	want, err := strconv.ParseInt(fs.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", fs.ResourceVersion, err)
	}
	k := client.ObjectKeyFromObject(fs)
	var writes []string
	eventuallyWhat(t, fmt.Sprintf("a finished reconcile of %s at resourceVersion %d", k, want), func() error {
		seq, starts := probe.snapshot()
		s, ok := starts[k]
		if !ok || s.rv < want {
			return fmt.Errorf("latest reconcile started read resourceVersion %d", s.rv)
		}
		if busy, err := operatorBusy(); err != nil || busy != "" {
			return fmt.Errorf("operator busy: %s %v", busy, err)
		}
		// Idle after the start: that reconcile has returned, and all its writes are counted. The writes
		// of a later reconcile (of the same object) would count too: seen, the wait goes on.
		if again, _ := probe.snapshot(); again != seq {
			return fmt.Errorf("another reconcile started")
		}
		writes = writesIn(opWrites.Since(s.writesAt), s.ns)
		return nil
	})
	return writes
}

// waitQuiet waits until the operator has nothing queued or running, and the latest reconcile of every
// FormsService in the test's namespaces wrote nothing: nothing it did can bring another reconcile (it
// wrote no owned object whose watch would), so it stays quiet until something else changes. (Other
// tests' resources are left out: one that stays broken may write on each of its rechecks.)
func waitQuiet(t *testing.T) {
	t.Helper()
	eventuallyWhat(t, "the operator quiet", func() error {
		seq, starts := probe.snapshot()
		for k := range starts {
			if !ownNamespace(t, k.Namespace) {
				delete(starts, k)
			}
		}
		if len(starts) == 0 {
			return fmt.Errorf("no reconcile yet in the test's namespaces")
		}
		if busy, err := operatorBusy(); err != nil || busy != "" {
			return fmt.Errorf("operator busy: %s %v", busy, err)
		}
		if again, _ := probe.snapshot(); again != seq {
			return fmt.Errorf("a reconcile started")
		}
		for k, s := range starts {
			if w := writesIn(opWrites.Since(s.writesAt), s.ns); len(w) > 0 {
				return fmt.Errorf("the latest reconcile of %s wrote %v", k, w)
			}
		}
		return nil
	})
}

// ownNamespace says whether ns was created by t, one of its subtests, or its parent.
func ownNamespace(t *testing.T, ns string) bool {
	owner, ok := namespaceOf.Load(ns)
	if !ok {
		return false
	}
	o := owner.(string)
	return o == t.Name() || strings.HasPrefix(o, t.Name()+"/") || strings.HasPrefix(t.Name(), o+"/")
}

// quietBound is how long the operator may take to settle or to take up a change.
const quietBound = 30 * time.Second
