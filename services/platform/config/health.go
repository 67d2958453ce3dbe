package config

import "time"

// Health configures GET /health.
type Health struct {
	// FormsURL and AuthURL are the base URLs whose /readyz the health service checks. Empty in the dev
	// server, which checks its in-process services directly.
	FormsURL string `json:"formsURL,omitempty"`
	AuthURL  string `json:"authURL,omitempty"`
	// WarnAfter turns a slow check into "warn"; Timeout turns it into "fail". Defaults 250ms and 1s.
	WarnAfter Duration `json:"warnAfter,omitempty"`
	Timeout   Duration `json:"timeout,omitempty"`
	// CacheFor is how long a result is reused, so that a scrape storm cannot stampede Redis. Default 2s.
	CacheFor Duration `json:"cacheFor,omitempty"`
}

func (h *Health) applyDefaults() {
	if h.WarnAfter == 0 {
		h.WarnAfter = Duration(250 * time.Millisecond)
	}
	if h.Timeout == 0 {
		h.Timeout = Duration(time.Second)
	}
	if h.CacheFor == 0 {
		h.CacheFor = Duration(2 * time.Second)
	}
}

func (h Health) validate() []error { return nil }
