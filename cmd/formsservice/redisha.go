//go:build !formsonly

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/platform/redisha"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// newRedisHAConfigCmd is the init container of the operator's highly available Redis (D41): the Redis
// image may have no shell and no CLI we can count on, the formsservice image has this binary. Hidden:
// only the operator runs it.
func newRedisHAConfigCmd(env *environment) *cobra.Command {
	var (
		n            redisha.Node
		self, pwFile string
		out          string
	)
	cmd := &cobra.Command{
		Use:    "redis-ha-config --nodes H:P,... --sentinels H:P,... --self POD --out DIR",
		Short:  "write a highly available Redis pod's redis.conf and sentinel.conf, following the current primary",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			i, err := ordinal(self)
			if err != nil {
				return usageError(cmd, err)
			}
			n.Self = i
			if pwFile != "" {
				if n.Password, err = secretfile.Read(pwFile); err != nil {
					return err
				}
			}
			if err := n.Validate(); err != nil {
				return usageError(cmd, err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), redisha.FailoverTimeout+30*time.Second)
			defer cancel()
			p, err := redisha.Write(ctx, n, out)
			if err != nil {
				return err
			}
			role := "a replica of " + p.Addr
			if p.Addr == n.Nodes[n.Self] {
				role = "the primary"
			}
			fmt.Fprintf(env.stdout, "%s is %s (from %s)\n", n.Nodes[n.Self], role, p.From)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&n.Nodes, "nodes", nil, "the data nodes' host:port in ordinal order")
	f.StringSliceVar(&n.Sentinels, "sentinels", nil, "the sentinels' host:port in the same order")
	f.StringVar(&self, "self", "", "this pod's name (its ordinal is the number after the last -) or index")
	f.StringVar(&n.MasterName, "master-name", "formsservice", "the name the sentinels monitor the primary under")
	f.StringVar(&pwFile, "password-file", "", "file holding the password of the nodes and the sentinels")
	f.StringVar(&n.Include, "include", "", "a redis.conf the written one includes first")
	f.StringVar(&n.Dir, "sentinel-dir", "", "the sentinel's working directory")
	f.DurationVar(&n.DownAfter, "down-after", redisha.DownAfter, "how long the primary may not answer before a sentinel takes it for down")
	f.StringVar(&out, "out", "", "the directory to write redis.conf and sentinel.conf into (the sentinel.conf left there by the last run names the primary it knew)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// ordinal is a StatefulSet pod's index: the number after the pod name's last "-", or the whole word.
func ordinal(self string) (int, error) {
	s := self[strings.LastIndex(self, "-")+1:]
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("--self %q: want a pod name ending in -N, or N", self)
	}
	return i, nil
}
