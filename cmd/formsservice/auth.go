package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/passkey"
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
		ks, err = keys.Load(cfg.Auth.SigningKeyFile, cfg.Auth.PreviousSigningKeyFile)
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
	svc, err := auth.New(auth.Options{Config: d.Config, Redis: d.Redis, Logger: d.Logger, Registerer: d.Metrics.Registry, Keys: ks, Mail: d.Mail})
	if err != nil {
		return nil, err
	}
	if !d.Dev { // the dev server keeps its embedded store in the same heap: no limit sized for auth alone
		limit := limitMemoryForHashing(svc.Users().Hasher().PoolBytes())
		d.Logger.Debug("auth: Go soft memory limit", "bytes", limit)
	}
	if d.Dev {
		if err := ensureDevUser(svc.Users()); err != nil {
			return nil, fmt.Errorf("dev user: %w", err)
		}
		d.Logger.Info("auth: dev user ready", "email", config.DevEmail)
	}
	return svc, nil
}

func ensureDevUser(us *users.Store) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := us.ByEmail(ctx, config.DevEmail)
	if !errors.Is(err, users.ErrNotFound) {
		return err
	}
	_, err = us.Create(ctx, config.DevEmail, "Demo User", config.DevPassword)
	if errors.Is(err, users.ErrEmailTaken) { // another dev server on the same REDIS_URL won the race
		return nil
	}
	return err
}

const usersUsage = `usage: formsservice users <create|set-password|signout|disable|enable|delete|list> [flags]

  create -email ADDRESS [-name NAME]   create an account; the password is read from stdin (one line)
  set-password -email ADDRESS          replace the password, read from stdin (one line), and sign the
                                       user out everywhere (every sign-in session and grant ends)
  signout -email ADDRESS               sign the user out everywhere
  disable -email ADDRESS               refuse the account's sign-ins and sign it out everywhere
  enable -email ADDRESS                allow a disabled account to sign in again
  delete -email ADDRESS                delete the account and revoke every token issued to it
  list [-json]                         print every account (id, e-mail, name, created)

The store is the configuration's redis section (-config, FORMSSERVICE_CONFIG) or REDIS_URL.
`

// cmdUsers manages sign-in accounts for operators.
func cmdUsers(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.stderr, usersUsage)
		return errUsage
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("users "+sub, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	configPath := fs.String("config", defaultConfigPath(env), "configuration file (YAML)")
	email := fs.String("email", "", "e-mail address of the account")
	name := fs.String("name", "", "display name (create)")
	asJSON := fs.Bool("json", false, "print JSON lines (list)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return err
	}
	cfg, rdb, err := toolStore(*configPath, env)
	if err != nil {
		return err
	}
	defer rdb.Close()
	us := users.NewStore(rdb, users.NewHasher(users.ParamsFrom(cfg.Auth.PasswordHash), 1))
	needEmail := func() error {
		if *email == "" {
			return fmt.Errorf("users %s: -email is required", sub)
		}
		return nil
	}

	switch sub {
	case "create":
		if err := needEmail(); err != nil {
			return err
		}
		pw, err := readPassword(env.stdin)
		if err != nil {
			return err
		}
		u, err := us.Create(ctx, *email, *name, pw)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "created %s (id %s)\n", u.Email, u.ID)
	case "set-password":
		if err := needEmail(); err != nil {
			return err
		}
		pw, err := readPassword(env.stdin)
		if err != nil {
			return err
		}
		u, err := us.SetPassword(ctx, *email, pw)
		if err != nil {
			return err
		}
		grants, sessions, err := signOutEverywhere(ctx, rdb, cfg, u.ID)
		if err != nil {
			return fmt.Errorf("password set for %s, but signing it out everywhere failed (run `users signout`): %w", u.Email, err)
		}
		fmt.Fprintf(env.stdout, "password set for %s; ended %d sign-in session(s), revoked %d grant(s)\n", u.Email, sessions, grants)
	case "signout", "disable", "enable":
		if err := needEmail(); err != nil {
			return err
		}
		u, err := us.ByEmail(ctx, *email)
		if sub != "signout" {
			u, err = us.SetDisabled(ctx, *email, sub == "disable")
		}
		if err != nil {
			return err
		}
		if sub == "enable" {
			fmt.Fprintf(env.stdout, "enabled %s\n", u.Email)
			return nil
		}
		grants, sessions, err := signOutEverywhere(ctx, rdb, cfg, u.ID)
		if err != nil {
			return err
		}
		verb := "signed out"
		if sub == "disable" {
			verb = "disabled and signed out"
		}
		fmt.Fprintf(env.stdout, "%s %s; ended %d sign-in session(s), revoked %d grant(s)\n", verb, u.Email, sessions, grants)
	case "delete":
		if err := needEmail(); err != nil {
			return err
		}
		u, err := us.Delete(ctx, *email)
		if err != nil {
			return err
		}
		n, _, err := signOutEverywhere(ctx, rdb, cfg, u.ID)
		if err != nil {
			return fmt.Errorf("deleted %s, but revoking its tokens failed (they stop working anyway, since the user is gone): %w", u.Email, err)
		}
		if err := passkey.NewStore(rdb, nil).RemoveAll(ctx, u.ID); err != nil {
			return fmt.Errorf("deleted %s, but removing its passkeys failed (they sign nobody in, since the user is gone): %w", u.Email, err)
		}
		fmt.Fprintf(env.stdout, "deleted %s (id %s); revoked %d grant(s)\n", u.Email, u.ID, n)
	case "list":
		enc := json.NewEncoder(env.stdout)
		return us.List(ctx, func(u *users.User) error {
			if *asJSON {
				return enc.Encode(map[string]any{"id": u.ID, "email": u.Email, "name": u.Name, "created": u.CreatedAt})
			}
			_, err := fmt.Fprintf(env.stdout, "%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Name, u.CreatedAt.Format(time.RFC3339))
			return err
		})
	default:
		fmt.Fprintf(env.stderr, "unknown users command %q\n\n%s", sub, usersUsage)
		return errUsage
	}
	return nil
}

// signOutEverywhere revokes every grant and ends every sign-in session of the user.
func signOutEverywhere(ctx context.Context, rdb redis.UniversalClient, cfg *config.Config, userID string) (grants, sessions int, err error) {
	return auth.SignOutEverywhere(ctx, rdb, cfg.Auth, userID)
}

// readPassword reads one line from stdin, so that the password never appears in argv or shell history.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("no password on stdin (pipe one line, e.g. `read -rs PW; printf '%s\\n' \"$PW\" | formsservice users create ...`)")
	}
	return pw, nil
}
