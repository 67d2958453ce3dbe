package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise the build's VCS revision.
var version string

// buildVersion names the running build: the link-time version, the module version, or the VCS
// revision (12 characters, "-dirty" when built from a modified tree).
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := vcs(info)
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// versionText is what --version prints: the version, then the module version, the VCS commit and
// time, and the Go release, as far as the build recorded them.
func versionText() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "formsservice " + buildVersion()
	}
	parts := []string{"module " + info.Main.Path + " " + info.Main.Version}
	if rev, dirty := vcs(info); rev != "" {
		c := "commit " + rev
		if dirty {
			c += " (modified)"
		}
		parts = append(parts, c)
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.time" {
			parts = append(parts, "committed "+s.Value)
		}
	}
	parts = append(parts, info.GoVersion)
	return fmt.Sprintf("formsservice %s\n%s", buildVersion(), strings.Join(parts, "\n"))
}

func vcs(info *debug.BuildInfo) (rev string, dirty bool) {
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, dirty
}
