//go:build !formsonly

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

// newCheckHealthCmd asks a health endpoint how the platform is, as the chart's `helm test` pod does: the
// image has no shell or curl, so the check is a command of the binary it already holds.
func newCheckHealthCmd(env *environment) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check-health URL [--timeout 10s]",
		Short: "GET a health endpoint and exit non-zero unless it answers 200 with status pass or warn",
		Long: `Sends one GET to URL (the health service's /health, in the IETF health-check format) and prints the
status code and the reported status. It exits 0 only for 200 with "status": "pass" or "warn"; a refused
connection, a timeout, another code or "fail" is an error. The chart's helm test hook runs it.`,
		Example: `  formsservice check-health http://acme-health.shop.svc/health`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := url.Parse(args[0])
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usageError(cmd, fmt.Errorf("URL %q: want http(s)://host/path", args[0]))
			}
			client := &http.Client{Timeout: timeout}
			resp, err := client.Get(u.String())
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var body struct {
				Status string `json:"status"`
			}
			raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if err != nil {
				return err
			}
			_ = json.Unmarshal(raw, &body) // a body that is not JSON reports no status, which fails below
			fmt.Fprintf(env.stdout, "%s: %d, status %q\n", u, resp.StatusCode, body.Status)
			if resp.StatusCode != http.StatusOK || (body.Status != "pass" && body.Status != "warn") {
				return fmt.Errorf("%s is not healthy: %d, status %q", u, resp.StatusCode, body.Status)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the answer")
	return cmd
}
