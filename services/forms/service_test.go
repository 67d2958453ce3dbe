package forms

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The service builds its delivery worker in New, so a delivery target that cannot be used stops the
// process before it serves (package delivery's tests hold every case of the worker's refusal).
func TestNew_DeliveryTargetsUnusable_RefusesToStart(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testredis.Start(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	src := &formstest.Source{}
	cfg := formstest.Config()
	cfg.Forms.Delivery = config.Delivery{Webhook: &config.Webhook{URLFile: filepath.Join(t.TempDir(), "missing")}}
	src.Set(t, cfg)
	_, err := New(Options{Config: src, Redis: rdb, Registerer: prometheus.NewRegistry()})
	if err == nil || !strings.Contains(err.Error(), "forms.delivery.webhook.urlFile") {
		t.Fatalf("New: %v, want a refusal naming forms.delivery.webhook.urlFile", err)
	}
}
