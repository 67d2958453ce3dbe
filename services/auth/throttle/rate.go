package throttle

import (
	"context"
	"fmt"
	"time"
)

// Allow counts a request of kind ("authorize-ip", "token-user", …) by who against limit per window,
// shared by every replica through Redis (the gate's script, gate.go: one call). It returns 0 when the
// request may go ahead, or how long to wait. limit <= 0 allows everything. Over the limit nothing more
// is counted, so the key never outlives its window.
func (l *Limiter) Allow(ctx context.Context, kind, who string, limit int, window time.Duration) (time.Duration, error) {
	if limit <= 0 || who == "" {
		return 0, nil
	}
	res, err := l.gate(ctx, l.now().UnixMilli(), []Rate{{kind, who, limit, window}}, nil, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return res.rateWait, nil
}
