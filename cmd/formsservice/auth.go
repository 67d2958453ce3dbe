//go:build !formsonly

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/users"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

// buildAuth builds the OAuth 2.0 / OpenID Connect provider. The signing key comes from
// auth.signingKeyFile (a mounted Secret); only the dev server may run without one, on an ephemeral key.
// The dev server also has the fixture user of docs/architecture.md (D5).
func buildAuth(d deps) (server.Service, error) {
	cfg := d.Config.Current()
	var ks *keys.Set
	var err error
	switch {
	case cfg.Auth.SigningKeyFile != "":
		ks, err = keys.Load(keys.Files{Current: cfg.Auth.SigningKeyFile, Previous: cfg.Auth.PreviousSigningKeyFile, Next: cfg.Auth.NextSigningKeyFile})
	case d.Dev:
		ks, err = keys.Generate()
		if err == nil {
			d.Logger.Warn("auth: generated an ephemeral signing key in memory; tokens stop verifying when the server stops (set auth.signingKeyFile to keep them)", "kid", ks.Current.ID)
		}
	default:
		err = errors.New("auth.signingKeyFile is required (PEM, EC P-256)")
	}
	if err != nil {
		return nil, err
	}
	svc, err := auth.New(auth.Options{Config: d.Config, Redis: d.Redis, Logger: d.Logger, Registerer: d.Metrics.Registry, Keys: ks, Dev: d.Dev,
		AuditLog: audit.NewLog(d.Stderr).With("service", d.Service), Mail: d.Mail, MFAKey: devMFAKey(d, cfg)})
	if err != nil {
		return nil, err
	}
	if !d.Dev { // the dev server keeps its embedded store in the same heap: no limit sized for auth alone
		limit := limitMemoryForHashing(svc.Users().Hasher().PoolBytes())
		d.Logger.Debug("auth: Go soft memory limit", "bytes", limit)
	}
	if d.Dev {
		if err := ensureDevUser(svc.Users(), cfg.Auth.Admin.Group); err != nil {
			return nil, fmt.Errorf("dev user: %w", err)
		}
		d.Logger.Info("auth: dev user ready", "email", config.DevEmail)
	}
	return svc, nil
}

// ensureDevUser makes the dev user, verified and a member of the admin group (the console's admin,
// D65), when it is missing any of them.
func ensureDevUser(us *users.Store, adminGroup string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := us.ByEmail(ctx, config.DevEmail)
	if errors.Is(err, users.ErrNotFound) {
		u, err = us.Create(ctx, config.DevEmail, "Demo User", config.DevPassword)
		if errors.Is(err, users.ErrEmailTaken) { // another dev server on the same REDIS_URL won the race
			return nil
		}
	}
	if err != nil {
		return err
	}
	if !slices.Contains(u.Groups, adminGroup) {
		if _, _, err := us.AddGroups(ctx, config.DevEmail, []string{adminGroup}); err != nil {
			return err
		}
	}
	if u.EmailVerified {
		return nil
	}
	// Verified, as an operator's `users create --verified`: an unverified account gets no passkey or
	// second factor (D51), and the dev user is there to try them.
	return us.SetVerified(ctx, u.ID, u.Email)
}

// devMFAKey is the dev server's key for sealing TOTP secrets when its configuration names none: made
// in memory over the embedded store, whose data ends with the process as the key does. Over a store
// that stays (REDIS_URL) it is nil: a key that changed at every start would lock out every second
// factor made before.
func devMFAKey(d deps, cfg *config.Config) []byte {
	if !d.Dev || !d.EmbeddedStore || cfg.Auth.MFA.SecretKeyFile != "" {
		return nil
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return key
}
