#!/usr/bin/env bash
# Builds a kube-apiserver from the Go module proxy (never downloads a
# release binary) and prints its path. The build takes about 20 minutes on
# two cores, so the binary is kept in a cache directory keyed by version:
#
#   ${FENCEGW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fencegw}/kube-apiserver-<version>
#
# How: a throwaway module requires k8s.io/kubernetes at the version and
# replaces every staging module its go.mod names (k8s.io/api,
# k8s.io/apiserver, ...) with the matching v0.<minor>.<patch> release, then
# runs go build k8s.io/kubernetes/cmd/kube-apiserver.
#
# Usage: scripts/kube-apiserver.sh [version]   (default v1.34.0)
# A concurrent second call waits for the first (flock) and reuses its binary.
set -euo pipefail

version=${1:-v1.34.0}
cache=${FENCEGW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fencegw}
bin=$cache/kube-apiserver-$version
mkdir -p "$cache"

exec 9>"$bin.lock"
flock 9
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

staging=v0.${version#v1.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off
go mod init fencegw.local/kube-apiserver-build >/dev/null 2>&1
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
if [ -z "$gomod" ] || [ ! -f "$gomod" ]; then
	echo "kube-apiserver.sh: cannot download k8s.io/kubernetes@$version from the module proxy" >&2
	exit 1
fi
# Every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.N.M".
sed -n 's|^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/src/.*$|\1|p' "$gomod" | while read -r mod; do
	go mod edit -replace "$mod=$mod@$staging"
done
go mod edit -require "k8s.io/kubernetes@$version"
cat >tools.go <<'EOF'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
EOF
go mod tidy >/dev/null 2>&1 || true
go get "k8s.io/kubernetes/cmd/kube-apiserver@$version" >/dev/null
echo "kube-apiserver.sh: building kube-apiserver $version (about 20 minutes on two cores)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$bin.tmp" "$bin"
echo "$bin"
