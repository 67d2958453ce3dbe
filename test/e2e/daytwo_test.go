//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/cluster"
	"github.com/formsservice/formsservice/test/internal/repo"
)

// dayTwo is what a platform team does with a running FormsService: edit its origins and clients, rotate
// its signing key, upgrade the operator under traffic, and delete it. Each step runs against the cluster
// the main test set up, reaching the issuer as the other checks do (through the ingress, or a relay to an
// auth pod's port-forward that a step re-targets when auth pods roll).
type dayTwo struct {
	main      *testing.T // the whole test's: what must outlive one step (a port-forward) is cleaned up with it
	k         *kind
	name      string
	forms     string // host:port of a forms pod's port-forward
	issuer    string // the FormsService's publicURL: the ingress, or the auth relay's URL
	authRelay *relay // nil behind the ingress (which follows the pods by itself)
	redirect  string // a redirect URI of e2eClient
	// client makes an HTTP client that reaches the issuer: through the ingress (its CA and address),
	// or a fresh connection per request to the relay, whose target a step changes.
	client func() *http.Client
}

// followAuth points the auth relay at a ready auth pod after auth rolled (without an ingress).
func (d *dayTwo) followAuth() {
	if d.authRelay != nil {
		d.authRelay.to(d.k.portForward(d.main, d.name, render.Auth))
	}
}

const (
	lateOrigin   = "https://late.acme.example"
	lateClient   = "late-app"
	lateRedirect = "https://late.acme.example/callback"
)

// liveEdit adds an origin and a client to the FormsService; both work once the kubelet has updated the
// mounted ConfigMap, and no pod of forms or auth was restarted or replaced for it.
func (d *dayTwo) liveEdit(t *testing.T) {
	before := d.k.podStates(t, d.name, render.Forms, render.Auth)
	d.k.update(t, d.name, "adding an origin and a client", func(u *unstructured.Unstructured) {
		origins, _, _ := unstructured.NestedSlice(u.Object, "spec", "allowedOrigins")
		clients, _, _ := unstructured.NestedSlice(u.Object, "spec", "oauthClients")
		clients = append(clients, map[string]any{"clientID": lateClient, "redirectURIs": []any{lateRedirect}})
		_ = unstructured.SetNestedSlice(u.Object, append(origins, lateOrigin), "spec", "allowedOrigins")
		_ = unstructured.SetNestedSlice(u.Object, clients, "spec", "oauthClients")
	})

	hc := d.client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cluster.Eventually(t, 3*time.Minute, "the new origin accepted by forms", func() (bool, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+d.forms+"/waitlist",
			strings.NewReader(`{"email":"late-origin@acme.example","consent":true}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", lateOrigin)
		res, err := hc.Do(req)
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode == http.StatusCreated || res.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", res.StatusCode, b)
	})
	verifier := oauth2.GenerateVerifier()
	conf := oauth2.Config{ClientID: lateClient, RedirectURL: lateRedirect, Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: d.issuer + "/oauth2/authorize"}}
	authorize := conf.AuthCodeURL("state-late-client", oauth2.S256ChallengeOption(verifier))
	cluster.Eventually(t, 3*time.Minute, "the new client's sign-in page", func() (bool, string) {
		res, err := hc.Get(authorize)
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		return res.StatusCode == http.StatusOK, fmt.Sprintf("%d %.200s", res.StatusCode, b)
	})

	if after := d.k.podStates(t, d.name, render.Forms, render.Auth); !slices.Equal(after, before) {
		t.Errorf("editing origins and clients restarted or replaced pods:\nbefore %v\nafter  %v", before, after)
	}
}

// rotateSigningKey signs in (with a refresh token), rotates the key with the FormsService's annotation
// while two other grants keep refreshing every 0.5 s, and checks that nobody notices: not one refresh
// answered anything but 200 (no invalid_grant) while the operator published the next key, promoted it
// and rolled auth twice; the JWKS holds both keys, the old access token still opens userinfo, the old ID
// token still verifies, and the old refresh token renews into tokens signed with the new key.
func (d *dayTwo) rotateSigningKey(t *testing.T) {
	ctx := context.Background()
	tok := goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password)
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token for scope offline_access")
	}
	oldID, _ := tok.Extra("id_token").(string)
	oldKid := kidOf(t, oldID)
	traffic := d.refreshTraffic(t, []*oauth2.Token{
		goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password),
		goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password),
	})
	defer traffic.stop()

	startedAt := time.Now()
	value := "e2e-" + time.Now().UTC().Format("20060102T150405Z")
	d.k.update(t, d.name, "annotating for a rotation", func(u *unstructured.Unstructured) {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["platform.formsservice.io/rotate-signing-key"] = value
		u.SetAnnotations(ann)
	})
	// Publish, roll, wait out the JWKS caches, promote, roll: the rotation is done with its steps when
	// every auth pod signs with the new key (Retiring: the old one verifies until its tokens expire).
	var phases []string
	cluster.Eventually(t, 10*time.Minute, "the rotation promoted on every auth pod (status.signingKey.phase Retiring)", func() (bool, string) {
		sk, _, _ := unstructured.NestedStringMap(d.k.get(t, d.name).Object, "status", "signingKey")
		if p := sk["phase"]; len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
		return sk["phase"] == "Retiring" && sk["previousKeyID"] == oldKid, fmt.Sprintf("status.signingKey %v", sk)
	})
	d.k.waitRolledOut(t, d.name, []string{render.Auth}, 3*time.Minute)
	d.followAuth() // the old pod of the port-forward is gone
	answers := traffic.stop()
	t.Logf("rotation in %s through the phases %v; %d refreshes", time.Since(startedAt).Round(time.Second), phases, len(answers))
	if !slices.Contains(phases, "Published") && !slices.Contains(phases, "Promoting") {
		t.Errorf("the rotation was not seen in steps: phases %v", phases)
	}
	counts := map[string]int{}
	for _, a := range answers {
		counts[strconv.Itoa(a.status)]++
		switch {
		case a.err != nil && d.authRelay != nil:
			// Through the port-forward relay a rolled pod drops the connection; the ingress does not.
			t.Logf("refresh at %s: %v (relay)", a.at.Sub(startedAt).Round(time.Millisecond), a.err)
		case a.err != nil || a.status != http.StatusOK:
			t.Errorf("refresh at %s into the rotation: status %d %s, error %v", a.at.Sub(startedAt).Round(time.Millisecond), a.status, a.body, a.err)
		}
	}
	if len(answers) < 20 {
		t.Errorf("only %d refreshes during the rotation: the test did not load it (%v)", len(answers), counts)
	}
	var kids []string
	cluster.Eventually(t, 2*time.Minute, "the JWKS with the new and the previous key", func() (bool, string) {
		kids = jwksKids(d.client(), d.issuer)
		return len(kids) >= 2 && slices.Contains(kids, oldKid), fmt.Sprintf("kids %v (the old one: %s)", kids, oldKid)
	})

	hc := d.client()
	ctx = oidc.ClientContext(ctx, hc) // discovery, JWKS and the refresh below
	if code := userinfoStatus(t, ctx, hc, d.issuer, tok.AccessToken); code != http.StatusOK {
		t.Errorf("userinfo with the access token from before the rotation: %d", code)
	}

	provider, err := oidc.NewProvider(ctx, d.issuer)
	if err != nil {
		t.Fatal(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: e2eClient})
	if _, err := verifier.Verify(ctx, oldID); err != nil {
		t.Errorf("the ID token from before the rotation no longer verifies: %v", err)
	}
	conf := oauth2.Config{ClientID: e2eClient, Endpoint: provider.Endpoint(), RedirectURL: d.redirect}
	renewed, err := conf.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refreshing with the refresh token from before the rotation: %v", err)
	}
	newID, _ := renewed.Extra("id_token").(string)
	if _, err := verifier.Verify(ctx, newID); err != nil {
		t.Errorf("the renewed ID token does not verify: %v", err)
	}
	if kid := kidOf(t, newID); kid == oldKid || !slices.Contains(kids, kid) {
		t.Errorf("the renewed ID token is signed with key %s; want the new key (JWKS %v, old %s)", kid, kids, oldKid)
	}
}

// upgradeUnderTraffic upgrades the operator's release to another image tag and another Redis image, with
// --max-concurrent-upgrades 1, while forms submissions and refresh-token grants keep coming through the
// services' ClusterIPs (which the node-cluster host routes; kind's does not), so the operator rolls the
// services and the managed Redis onto the new images under load. Beside the sample's FormsService run a
// second one, which must wait for the first's upgrade (UpgradeQueued) and never move at the same time,
// and one that pins spec.image, whose workloads and pods the upgrade must not touch (D92). Not one
// request may fail, except while the sample's single Redis restarts on its new image (a single Redis
// has no replica to hand over to: its clients are answered 5xx for those seconds, never a 201 that is
// then lost); every acknowledged submission must be in the store afterwards, and every signed-in user's
// tokens must still work. The pacing keeps the forms traffic under the sample's 60 a minute.
func (d *dayTwo) upgradeUnderTraffic(t *testing.T) {
	next := os.Getenv("FORMSSERVICE_E2E_NEXT_IMAGE") // the same image under another tag, loaded by e2e.sh
	if next == "" {
		t.Skip("FORMSSERVICE_E2E_NEXT_IMAGE is not set: only hack/node-cluster/e2e.sh loads a second tag and routes the Service network to the host")
	}
	image, redisImage, nextRedis := os.Getenv("FORMSSERVICE_E2E_IMAGE"), os.Getenv("FORMSSERVICE_E2E_REDIS_IMAGE"), os.Getenv("FORMSSERVICE_E2E_NEXT_REDIS_IMAGE")
	if nextRedis == "" || redisImage == "" {
		t.Fatal("FORMSSERVICE_E2E_NEXT_REDIS_IMAGE and FORMSSERVICE_E2E_REDIS_IMAGE must be set with FORMSSERVICE_E2E_NEXT_IMAGE (hack/node-cluster/e2e.sh)")
	}
	ctx := context.Background()
	// Two more FormsServices: one on the operator's images, one pinned to the image it runs now.
	var extra []*unstructured.Unstructured
	for _, fs := range []struct{ name, image string }{{fleetSecond, ""}, {fleetPinned, image}} {
		extra = append(extra, d.k.createSmallFormsService(t, fs.name, fs.image))
	}
	defer func() {
		for _, u := range extra {
			_ = d.k.client.Delete(ctx, u)
		}
	}()
	for _, name := range []string{fleetSecond, fleetPinned} {
		d.k.waitReady(t, name, 5*time.Minute)
		d.k.waitOperandVersion(t, name, image, 3*time.Minute)
	}
	pinnedPods := d.k.podStates(t, fleetPinned, render.Forms, render.Auth, render.Health, render.Redis)
	formsURL := "http://" + d.k.clusterIP(t, d.name+"-"+render.Forms)
	authURL := "http://" + d.k.clusterIP(t, d.name+"-"+render.Auth)
	chains := []*oauth2.Token{
		goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password),
		goSignIn(t, d.client(), d.issuer, e2eClient, d.redirect, email, password),
	}

	type answer struct {
		what     string
		status   int
		err      error
		from, at time.Time // sent, answered
	}
	var mu sync.Mutex
	var answers []answer
	var accepted []string // e-mails answered 201
	record := func(a answer) { mu.Lock(); answers = append(answers, a); mu.Unlock() }
	hc := freshClient()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // forms: one submission every 1.5 s
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(1500 * time.Millisecond): // the traffic's pace, not a wait for a condition
			}
			addr := fmt.Sprintf("roll-%d@acme.example", n)
			req, _ := http.NewRequest(http.MethodPost, formsURL+"/waitlist", strings.NewReader(`{"email":"`+addr+`","consent":true}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", e2eOrigin)
			sent := time.Now()
			res, err := hc.Do(req)
			a := answer{what: "waitlist", err: err, from: sent, at: time.Now()}
			if err == nil {
				a.status = res.StatusCode
				res.Body.Close()
				if a.status == http.StatusCreated {
					mu.Lock()
					accepted = append(accepted, addr)
					mu.Unlock()
				}
			}
			record(a)
		}
	})
	for i := range chains {
		wg.Go(func() { // auth: the user's grant refreshed every 0.5 s
			for {
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond): // the traffic's pace
				}
				form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {chains[i].RefreshToken}, "client_id": {e2eClient}}
				sent := time.Now()
				res, err := hc.PostForm(authURL+"/oauth2/token", form)
				a := answer{what: "refresh", err: err, from: sent, at: time.Now()}
				if err == nil {
					a.status = res.StatusCode
					var tok oauth2.Token
					if res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&tok) == nil && tok.RefreshToken != "" {
						mu.Lock()
						chains[i] = &tok
						mu.Unlock()
					}
					res.Body.Close()
				}
				record(a)
			}
		})
	}
	stopped := false
	stopTraffic := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopTraffic()

	cluster.Eventually(t, time.Minute, "traffic flowing before the upgrade", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= 3, fmt.Sprintf("%d answers, %d submissions accepted", len(answers), len(accepted))
	})
	i := strings.LastIndex(next, ":")
	helm := repo.Tool(t, "helm", "hack/install-chart-tools.sh")
	watch := d.k.watchFleet(t, []string{d.name, fleetSecond}, []string{fleetPinned}, image, next, redisImage, nextRedis)
	defer watch.end()
	upgradeAt := time.Now()
	repo.Run(t, []string{"KUBECONFIG=" + d.k.kubeconfig}, helm, "upgrade", "formsservice-operator", "charts/formsservice-operator",
		"--namespace", operatorNS, "--reuse-values", "--wait", "--timeout", "5m", "--set", "image.tag="+next[i+1:],
		"--set", "operands.redis.image="+nextRedis, "--set", "maxConcurrentUpgrades=1")
	cluster.Eventually(t, 8*time.Minute, "both FormsServices on "+next+" and "+nextRedis+", rolled out", func() (bool, string) {
		watch.mu.Lock()
		defer watch.mu.Unlock()
		return len(watch.done) == 2, fmt.Sprintf("started %v, finished %v", slices.Collect(maps.Keys(watch.started)), slices.Collect(maps.Keys(watch.done)))
	})
	rolledAt := time.Now()
	watch.end()
	watch.check(t)
	if after := d.k.podStates(t, fleetPinned, render.Forms, render.Auth, render.Health, render.Redis); !slices.Equal(after, pinnedPods) {
		t.Errorf("the operator's upgrade restarted or replaced pods of %s, which pins spec.image:\nbefore %v\nafter  %v", fleetPinned, pinnedPods, after)
	}
	// The sample's single Redis restarted on its new image: no replica to hand over to, so a request
	// that was under way around it may be refused (5xx), never answered 201 and then lost (the export
	// below). The window runs from the sample's admission to its new Redis seen rolled out, and 5 s
	// more for the services' pooled connections to the old pod, each of which fails once.
	downFrom, downTo := watch.redisWindow(d.name)
	if downFrom.IsZero() || downTo.IsZero() {
		t.Fatalf("the sample's Redis restart was not seen (from %v to %v)", downFrom, downTo)
	}
	inRestart := func(from, at time.Time) bool {
		return at.After(downFrom) && from.Before(downTo.Add(5*time.Second))
	}
	var during int
	cluster.Eventually(t, time.Minute, "traffic after the roll", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		during = 0
		after := 0
		for _, a := range answers {
			switch {
			case a.at.After(rolledAt):
				after++
			case a.at.After(upgradeAt):
				during++
			}
		}
		return after >= 6, fmt.Sprintf("%d answers after the roll", after)
	})
	stopTraffic()

	counts := map[string]int{}
	refused := 0
	for _, a := range answers {
		counts[fmt.Sprintf("%s %d", a.what, a.status)]++
		ok := a.err == nil && ((a.what == "waitlist" && a.status == http.StatusCreated) || (a.what == "refresh" && a.status == http.StatusOK))
		switch {
		case ok:
		case inRestart(a.from, a.at) && a.err == nil && a.status >= 500:
			refused++
		default:
			t.Errorf("%s at %s after the upgrade began: status %d, error %v (the Redis restart: %s to %s)", a.what, a.at.Sub(upgradeAt).Round(time.Millisecond),
				a.status, a.err, downFrom.Sub(upgradeAt).Round(time.Millisecond), downTo.Sub(upgradeAt).Round(time.Millisecond))
		}
	}
	t.Logf("upgrade to %s and %s: both FormsServices rolled in %s; %d requests, %d during the roll, %d refused while the single Redis restarted (%s): %v",
		next, nextRedis, rolledAt.Sub(upgradeAt).Round(time.Second), len(answers), during, refused, downTo.Sub(downFrom).Round(100*time.Millisecond), counts)
	if during < 10 {
		t.Errorf("only %d requests while the services rolled: the test did not load the roll", during)
	}

	// No acknowledged submission lost: the store's export holds every e-mail answered 201.
	exported := d.k.execInComponent(t, d.name, render.Forms, []string{"/formsservice", "export", "waitlist", "--format", "jsonl", "-config", render.ConfigPath}, "")
	for _, addr := range accepted {
		if !strings.Contains(exported, `"`+addr+`"`) {
			t.Errorf("%s was answered 201 but is not in the export after the upgrade", addr)
		}
	}
	// Every signed-in user's latest tokens still work on the new pods.
	for i, tok := range chains {
		if code := userinfoStatus(t, ctx, hc, authURL, tok.AccessToken); code != http.StatusOK {
			t.Errorf("grant %d: userinfo with its latest access token after the upgrade: %d", i, code)
		}
	}
	d.followAuth() // the issuer leads to a new auth pod
}

// refreshAnswer is one answer of the token endpoint to a refresh.
type refreshAnswer struct {
	status int
	body   string
	err    error
	at     time.Time
}

// refreshing keeps grants refreshing until stop, which returns every answer.
type refreshing struct {
	stop func() []refreshAnswer
}

// refreshTraffic refreshes each grant every 0.5 s, each time with the refresh token the last answer
// gave, through the auth Service's ClusterIP when the node cluster routes the Service network (as the
// upgrade does), else through the issuer.
func (d *dayTwo) refreshTraffic(t *testing.T, chains []*oauth2.Token) refreshing {
	tokenURL, hc := d.issuer+"/oauth2/token", d.client()
	if os.Getenv("FORMSSERVICE_E2E_NEXT_IMAGE") != "" {
		tokenURL, hc = "http://"+d.k.clusterIP(t, d.name+"-"+render.Auth)+"/oauth2/token", freshClient()
	}
	var mu sync.Mutex
	var answers []refreshAnswer
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range chains {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond): // the traffic's pace, not a wait for a condition
				}
				form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {chains[i].RefreshToken}, "client_id": {e2eClient}}
				res, err := hc.PostForm(tokenURL, form)
				a := refreshAnswer{err: err, at: time.Now()}
				if err == nil {
					a.status = res.StatusCode
					b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
					res.Body.Close()
					var tok oauth2.Token
					if res.StatusCode == http.StatusOK && json.Unmarshal(b, &tok) == nil && tok.RefreshToken != "" {
						chains[i] = &tok
					} else {
						a.body = string(b)
					}
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		})
	}
	var once sync.Once
	return refreshing{stop: func() []refreshAnswer {
		once.Do(func() { close(stop); wg.Wait() })
		mu.Lock()
		defer mu.Unlock()
		return answers
	}}
}

// clusterIP is the Service's ClusterIP and port.
func (k *kind) clusterIP(t *testing.T, service string) string {
	t.Helper()
	svc, err := k.clientset.CoreV1().Services(appNS).Get(context.Background(), service, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
}

// execInComponent runs a command in the main container of a ready pod of the component and returns its
// standard output.
func (k *kind) execInComponent(t *testing.T, name, component string, command []string, stdin string) string {
	t.Helper()
	pod := k.readyPod(t, name, component)
	req := k.clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(appNS).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: component, Command: command, Stdin: stdin != "", Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(k.cfg, http.MethodPost, req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	if err := exec.StreamWithContext(context.Background(), opts); err != nil {
		t.Fatalf("%s in %s: %v\n%s", strings.Join(command, " "), pod, err, stderr.String())
	}
	return stdout.String()
}

// deleteAndCollect deletes the FormsService and waits until the garbage collector has removed every
// object that named it as owner, and the pods of its workloads.
func (d *dayTwo) deleteAndCollect(t *testing.T) {
	ctx := context.Background()
	u := d.k.get(t, d.name)
	owned := d.k.ownedBy(t, u.GetUID())
	wanted := []string{"Deployment/" + d.name + "-" + render.Forms, "ConfigMap/" + d.name + "-config"}
	// The managed Redis is the FormsService's while it runs one (the move phase points it at the team's
	// own, and the operator removes the managed StatefulSet then).
	if addrs, _, _ := unstructured.NestedSlice(u.Object, "spec", "redis", "addresses"); len(addrs) == 0 {
		wanted = append(wanted, "StatefulSet/"+d.name+"-redis")
	}
	for _, want := range wanted {
		if !slices.Contains(owned, want) {
			t.Fatalf("%s is not among the objects the FormsService owns: %v", want, owned)
		}
	}
	if err := d.k.client.Delete(ctx, u); err != nil {
		t.Fatalf("deleting the FormsService: %v", err)
	}
	cluster.Eventually(t, 3*time.Minute, "every owned object collected", func() (bool, string) {
		left := d.k.ownedBy(t, u.GetUID())
		pods, err := d.k.clientset.CoreV1().Pods(appNS).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(map[string]string{render.LabelInstance: d.name}).String()})
		if err != nil {
			return false, err.Error()
		}
		return len(left) == 0 && len(pods.Items) == 0, fmt.Sprintf("%d owned objects left %v, %d pods", len(left), left, len(pods.Items))
	})
	t.Logf("collected after the FormsService's deletion: %d objects (%s)", len(owned), strings.Join(owned, ", "))
}

// podStates lists the pods of the components as "name uid restarts", sorted.
func (k *kind) podStates(t *testing.T, name string, components ...string) []string {
	t.Helper()
	var out []string
	for _, c := range components {
		pods, err := k.clientset.CoreV1().Pods(appNS).List(context.Background(), metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(selector(name, c)).String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue // a pod of an earlier roll, on its way out
			}
			restarts := int32(0)
			for _, s := range p.Status.ContainerStatuses {
				restarts += s.RestartCount
			}
			out = append(out, fmt.Sprintf("%s %s %d", p.Name, p.UID, restarts))
		}
	}
	sort.Strings(out)
	return out
}

// rolledOut reports whether the Deployment's rollout is complete: its controller saw the current
// template, every replica runs it and is available, and no pod of an older one is left.
func (k *kind) rolledOut(t *testing.T, deployment string, templateOK func(*corev1.PodTemplateSpec) bool) (bool, string) {
	t.Helper()
	ctx := context.Background()
	var dep appsv1.Deployment
	if err := k.client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: deployment}, &dep); err != nil {
		return false, err.Error()
	}
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	s := dep.Status
	state := fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d total %d",
		dep.Generation, s.ObservedGeneration, want, s.UpdatedReplicas, s.AvailableReplicas, s.Replicas)
	return templateOK(&dep.Spec.Template) && s.ObservedGeneration == dep.Generation &&
		s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want, state
}

// ownedKinds are the kinds of object the operator creates for a FormsService in its namespace.
var ownedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
}

// ownedBy lists the objects in the test's namespace whose owner references name uid, as Kind/name
// (metadata-only lists).
func (k *kind) ownedBy(t *testing.T, uid types.UID) []string {
	t.Helper()
	var out []string
	for _, gvk := range ownedKinds {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := k.client.List(context.Background(), l, client.InNamespace(appNS)); err != nil {
			t.Fatalf("listing %ss: %v", gvk.Kind, err)
		}
		for _, o := range l.Items {
			for _, ref := range o.OwnerReferences {
				if ref.UID == uid {
					out = append(out, gvk.Kind+"/"+o.Name)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// freshClient is an HTTP client that opens a connection per request. Without an ingress the issuer is a
// relay to a port-forward that a step re-targets when auth pods roll, and a pooled connection would
// still lead to the old pod; the traffic of the upgrade step picks a Service endpoint per request.
func freshClient() *http.Client {
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

var (
	signInFormRe = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">(.*?)</form>`)
	hiddenRe     = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// goSignIn signs in through the hosted page the way a browser without JavaScript does (a cookie jar,
// the form's hidden fields, redirects read rather than followed), and redeems the code with PKCE for
// tokens with a refresh token (scope offline_access).
func goSignIn(t *testing.T, hc *http.Client, issuer, clientID, redirectURI, email, password string) *oauth2.Token {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jar, _ := cookiejar.New(nil)
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	verifier := oauth2.GenerateVerifier()
	conf := oauth2.Config{ClientID: clientID, RedirectURL: redirectURI,
		Scopes:   []string{oidc.ScopeOpenID, "email", oidc.ScopeOfflineAccess},
		Endpoint: oauth2.Endpoint{AuthURL: issuer + "/oauth2/authorize", TokenURL: issuer + "/oauth2/token", AuthStyle: oauth2.AuthStyleInParams}}
	res, err := hc.Get(conf.AuthCodeURL("state-day-two-0001", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	form := signInFormRe.FindStringSubmatch(string(page))
	if form == nil {
		t.Fatalf("no sign-in form (%d): %.300s", res.StatusCode, page)
	}
	fields := url.Values{"email": {email}, "password": {password}, "action": {"signin"}}
	for _, m := range hiddenRe.FindAllStringSubmatch(form[2], -1) {
		fields.Set(m[1], html.UnescapeString(m[2]))
	}
	res, err = hc.PostForm(issuer+html.UnescapeString(form[1]), fields)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("sign-in answered %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	tok, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange: %v", err)
	}
	return tok
}

// kidOf is the key ID in a JWT's header.
func kidOf(t *testing.T, jwt string) string {
	t.Helper()
	header, _, _ := strings.Cut(jwt, ".")
	b, err := base64.RawURLEncoding.DecodeString(header)
	var h struct{ Kid string }
	if err != nil || json.Unmarshal(b, &h) != nil || h.Kid == "" {
		t.Fatalf("no kid in the JWT header %q", header)
	}
	return h.Kid
}

// jwksKids lists the key IDs the issuer publishes.
func jwksKids(hc *http.Client, issuer string) []string {
	res, err := hc.Get(issuer + "/.well-known/jwks.json")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var set struct{ Keys []struct{ Kid string } }
	if json.NewDecoder(res.Body).Decode(&set) != nil {
		return nil
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

// userinfoStatus calls userinfo at issuer with an access token and returns the status.
func userinfoStatus(t *testing.T, ctx context.Context, hc *http.Client, issuer, accessToken string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/oauth2/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+accessToken)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
