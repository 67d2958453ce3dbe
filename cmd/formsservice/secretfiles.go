package main

import (
	"fmt"
	"log/slog"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// checkSecretFiles refuses to start with a secret file (a signing key, a password, a client secret)
// that every user of the machine may write, since they could put in their own key, and warns about one
// they may read. A missing file is left to the service that reads it, which names it.
func checkSecretFiles(cfg *config.Config, log *slog.Logger) error {
	for _, f := range cfg.SecretFiles() {
		readable, writable, mode, err := secretfile.Exposure(f.Path)
		switch {
		case err != nil:
		case writable:
			return fmt.Errorf("%s: %s can be written by every user of this machine (mode %v); make it 0600, or 0440 with the service's group", f.Key, f.Path, mode)
		case readable:
			log.Warn("a secret file can be read by every user of this machine", "key", f.Key, "file", f.Path, "mode", mode.String(),
				"fix", "chmod 600 (or 440 with the service's group)")
		}
	}
	return nil
}
