package throttle

import (
	"context"
	"time"
)

// Sign-up budgets. Every sign-up with valid fields counts, whether it creates an account or finds the
// address taken (the person is told the same either way), and is reserved before anything is created or
// sent, so that no number of parallel requests creates more accounts or sends more mail than a budget
// allows. A sign-up is not given back when it succeeds: the budgets bound creations, not failures.
const (
	BudgetSignupAddress = "signup-address" // sign-ups from one client address
	BudgetSignupEmail   = "signup-email"   // sign-ups for one e-mail address (the mail it is sent)
)

// SignupLimits are the sign-ups allowed within Window per client address and per e-mail address; 0
// disables a limit.
type SignupLimits struct {
	PerIP      int
	PerAddress int
	Window     time.Duration
}

// ReserveSignup counts a sign-up for email (canonical) from the client address ip. When a budget
// refuses it counts nothing and says why. The reservation is kept whatever the outcome; Release it only
// when the sign-up could not be carried out (the store failed).
func (l *Limiter) ReserveSignup(ctx context.Context, email, ip string, lim SignupLimits) (*Reservation, *Refusal, error) {
	var bs []budget
	if lim.PerIP > 0 && ip != "" {
		bs = append(bs, budget{BudgetSignupAddress, budgetKey("signup-addr", ip), lim.PerIP, 0, 0, 0})
	}
	if lim.PerAddress > 0 && email != "" {
		bs = append(bs, budget{BudgetSignupEmail, budgetKey("signup-email", email), lim.PerAddress, 0, 0, 0})
	}
	return l.reserve(ctx, nil, bs, lim.Window, 0, nil)
}

// Budgets of the mails a person asks for on the hosted page (a verification link again, a password
// reset), per journey: journey + "-address" for one client address, journey + "-email" for one e-mail
// address. Every request with a well-formed address counts, whether an account has the address or not
// (the person is told the same either way), and is reserved before the mail is sent.

// ReserveMail counts a mail of journey ("verify", "reset") for email (canonical) from the client address
// ip, as ReserveSignup does for sign-ups.
func (l *Limiter) ReserveMail(ctx context.Context, journey, email, ip string, lim SignupLimits) (*Reservation, *Refusal, error) {
	var bs []budget
	if lim.PerIP > 0 && ip != "" {
		bs = append(bs, budget{journey + "-address", budgetKey(journey+"-addr", ip), lim.PerIP, 0, 0, 0})
	}
	if lim.PerAddress > 0 && email != "" {
		bs = append(bs, budget{journey + "-email", budgetKey(journey+"-email", email), lim.PerAddress, 0, 0, 0})
	}
	return l.reserve(ctx, nil, bs, lim.Window, 0, nil)
}
