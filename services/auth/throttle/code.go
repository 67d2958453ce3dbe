package throttle

import (
	"context"
	"time"
)

// Second-factor budgets (docs/architecture.md D20). A code of a sign-in's second step (TOTP or recovery)
// is reserved before it is checked and settled after, exactly as a password is (budget.go), against:
//
//   - the user's code budget, which every browser shares. There is no device budget for codes: the
//     right password alone earns a browser the account's device cookie, so a budget per browser would
//     give whoever has the password a fresh one at every sign-in. Failures slow down as the sign-in's do
//     (DelayAfter, MaxDelay) and then stop until the window ends; a right code gives its attempt back
//     and leaves the failures others made.
//   - the client address's sign-in budget (the same key as the password's): from one address, wrong
//     passwords and wrong codes draw on one budget.
const BudgetCode = "code"

// CodeLimits are the code budget (PerUser wrong codes within Window, slowed after DelayAfter up to
// MaxDelay) and the client address's sign-in budget (IP within IPWindow). 0 disables a limit.
type CodeLimits struct {
	PerUser    int
	Window     time.Duration
	DelayAfter int
	MaxDelay   time.Duration
	IP         int
	IPWindow   time.Duration
}

// ReserveCode counts a second-factor code of user (the account's ID) from the client address ip before
// it is checked. When a budget refuses it counts nothing and says why; settle the reservation with
// Failed (a wrong code), Succeeded (a right one) or Release (the code could not be checked).
func (l *Limiter) ReserveCode(ctx context.Context, user, ip string, lim CodeLimits) (*Reservation, *Refusal, error) {
	var bs []budget
	if lim.PerUser > 0 && user != "" {
		bs = append(bs, budget{name: BudgetCode, key: budgetKey("code", user), limit: lim.PerUser, delayAfter: lim.DelayAfter, window: lim.Window})
	}
	if lim.IP > 0 && ip != "" {
		bs = append(bs, budget{name: BudgetAddress, key: budgetKey("addr", ip), limit: lim.IP, window: lim.IPWindow})
	}
	return l.reserve(ctx, nil, bs, max(lim.Window, lim.IPWindow), lim.MaxDelay, nil)
}
