package main

import (
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=…"; it is
// the version printed when the build carries no module version (a build
// in the repository rather than `go install …@version`).
var version = "dev"

// versionString is what `fencegw version` and `fencegw --version` print
// after "fencegw ": the module version from the build information, or
// else main.version, followed by the VCS commit when the build recorded
// one (not with -buildvcs=false, nor for `go install …@version`, whose
// version already names the commit).
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	return describeBuild(info, version)
}

// describeBuild is versionString for the build information info and the
// linker-set fallback.
func describeBuild(info *debug.BuildInfo, fallback string) string {
	v := fallback
	if mv := info.Main.Version; mv != "" && mv != "(devel)" {
		v = mv
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += ", modified"
	}
	return v + " (commit " + rev + ")"
}
