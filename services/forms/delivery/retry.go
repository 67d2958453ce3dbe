package delivery

import (
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
)

// lastAttempt reports whether a failed attempt ends delivery: the maxAttempts-th, or one of a message
// older than maxAge (zero, before defaults are applied, means no limit).
func lastAttempt(d config.Delivery, attempt int64, age time.Duration) bool {
	return (d.MaxAttempts > 0 && attempt >= int64(d.MaxAttempts)) || (d.MaxAge > 0 && age >= d.MaxAge.D())
}

// backoff is the idle time after which a message delivered n times is tried again.
func backoff(n int64, d config.Delivery) time.Duration {
	wait := d.RetryAfter.D()
	for i := int64(1); i < n && wait < d.MaxRetryInterval.D(); i++ {
		wait *= 2
	}
	return min(wait, d.MaxRetryInterval.D())
}
