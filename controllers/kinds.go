package controllers

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// OptionalKinds are the kinds a cluster may not serve: the operator writes them only where their CRDs
// are installed, and watches and caches them only when they are served at start-up.
var OptionalKinds = []schema.GroupVersionKind{HTTPRouteGVK, ServiceMonitorGVK}

// DefaultKindRecheck is how often a kind found missing is looked for again, and only while a
// FormsService asks for it.
const DefaultKindRecheck = 5 * time.Minute

// ServedKinds remembers which optional kinds the cluster serves. Discovery runs once, at start-up; a
// served kind stays served, and a missing one is looked up again at most every Recheck and only when a
// FormsService needs it. A reconcile therefore sends no discovery request at all in the usual case (the
// client's REST mapper would ask again, with a 404, for every lookup of a kind that is not there).
type ServedKinds struct {
	// Recheck: 0 means DefaultKindRecheck.
	Recheck time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	discovery discovery.DiscoveryInterface
	mu        sync.Mutex
	known     map[schema.GroupVersionKind]servedAt
	lookups   int
}

type servedAt struct {
	served bool
	at     time.Time
}

// DiscoverKinds asks the API server once which of OptionalKinds it serves.
func DiscoverKinds(cfg *rest.Config) (*ServedKinds, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewServedKinds(dc)
}

// NewServedKinds looks up OptionalKinds through dc.
func NewServedKinds(dc discovery.DiscoveryInterface) (*ServedKinds, error) {
	k := &ServedKinds{discovery: dc, known: map[schema.GroupVersionKind]servedAt{}}
	for _, gvk := range OptionalKinds {
		if _, err := k.lookup(gvk); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// Served reports what discovery said about gvk, without asking again.
func (k *ServedKinds) Served(gvk schema.GroupVersionKind) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.known[gvk].served
}

// Serves reports whether the cluster serves gvk. It asks discovery only when gvk was missing, wanted
// says a FormsService needs it, and the last lookup is older than Recheck.
func (k *ServedKinds) Serves(gvk schema.GroupVersionKind, wanted bool) (bool, error) {
	k.mu.Lock()
	s, ok := k.known[gvk]
	k.mu.Unlock()
	if ok && (s.served || !wanted || k.now().Sub(s.at) < k.recheck()) {
		return s.served, nil
	}
	return k.lookup(gvk)
}

// Lookups is how many discovery requests were sent, for tests.
func (k *ServedKinds) Lookups() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lookups
}

func (k *ServedKinds) lookup(gvk schema.GroupVersionKind) (bool, error) {
	k.mu.Lock()
	k.lookups++
	k.mu.Unlock()
	served := false
	list, err := k.discovery.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, err
	default:
		for _, r := range list.APIResources {
			if r.Kind == gvk.Kind {
				served = true
			}
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.known[gvk] = servedAt{served: served, at: k.now()}
	return served, nil
}

func (k *ServedKinds) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

func (k *ServedKinds) recheck() time.Duration {
	if k.Recheck > 0 {
		return k.Recheck
	}
	return DefaultKindRecheck
}
