#!/usr/bin/env bash
# Runs the whole test suite: formatting, vet, staticcheck, the race-enabled
# tests (which start their own throwaway PostgreSQL and embedded etcd), and a
# short pass of every fuzz target.
#
# PostgreSQL: the tests use FENCEGW_TEST_POSTGRES_DSN when set, otherwise
# they start a throwaway cluster from the server binaries under
# /usr/lib/postgresql/*/bin, installed here with apt-get when missing.
# Chromium (for the web page's browser tests) likewise.
# With CI=true a missing service fails the run instead of skipping tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# kube-apiserver: the kubernetes epoch source's tests (internal/testutil/testkube)
# run a real kube-apiserver, which scripts/kube-apiserver.sh builds from the
# Go module proxy (about 20 minutes on two cores, once: it is cached). The
# full run starts that build first, in the background, so that it overlaps
# vet, staticcheck and the main tests; the packages that need it run in a
# second go test after the main one, once the build has ended. testkube
# waits (silently, at most 40 minutes) for the status file the build fills:
# "ok", or "failed" and why. FENCEGW_TEST_KUBE_APISERVER set by the caller
# skips the build. The quick tier needs none of it.
kube_pid=
if [ "${1:-}" != quick ]; then
	kube_work=$(mktemp -d)
	export FENCEGW_TEST_KUBE_STATUS=$kube_work/status
	: >"$FENCEGW_TEST_KUBE_STATUS"
	if [ -n "${FENCEGW_TEST_KUBE_APISERVER:-}" ]; then
		echo ok >"$FENCEGW_TEST_KUBE_STATUS"
	else
		export FENCEGW_TEST_KUBE_APISERVER="${FENCEGW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fencegw}/kube-apiserver-v1.34.0"
		(
			if scripts/kube-apiserver.sh >"$kube_work/build.log" 2>&1; then
				echo ok >"$FENCEGW_TEST_KUBE_STATUS"
			else
				echo "failed: $(tail -n 5 "$kube_work/build.log" | tr '\n' ' ')" >"$FENCEGW_TEST_KUBE_STATUS"
			fi
		) &
		kube_pid=$!
	fi
fi
# kube_packages need kube-apiserver; kube_tests are the tests of
# kube_test_packages (cmd/fencegw, and the fault suite's kubernetes epoch
# source) that do. All run in the second go test; the first skips
# kube_tests.
kube_packages="./tokens/source/kubesource ./internal/testutil/testkube"
kube_test_packages="./cmd/fencegw ./faults"
kube_tests='^(TestBringYourOwnKubernetesLease|TestKubeLeaderExample|TestEpochSourcesKube)$'

# install_or_warn WHAT TESTS PACKAGE...: installs WHAT, a service the tests
# need, with apt-get when run as root: the first of the Debian PACKAGEs that
# installs (it fails, and with it the run, when none does). Otherwise it
# warns that the TESTS tests will skip.
install_or_warn() {
	local what=$1 tests=$2 pkg
	shift 2
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing $what for the tests"
		apt-get update -qq
		for pkg in "$@"; do
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null && return 0
		done
		return 1
	fi
	echo "warning: no ${what#the }; $tests tests will skip (or fail with CI=true)" >&2
}

if [ -z "${FENCEGW_TEST_POSTGRES_DSN:-}" ] && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	install_or_warn "the PostgreSQL server binaries" PostgreSQL postgresql-15 postgresql
fi

# Redis: the redis epoch source's tests start throwaway servers from
# Debian's redis-server, installed here with apt-get when missing.
if ! command -v redis-server >/dev/null; then
	install_or_warn "redis-server" Redis redis-server
fi

# ZooKeeper: the zookeeper epoch source's tests (internal/testutil/testzk)
# start a throwaway standalone server from Debian's zookeeper package (or
# FENCEGW_TEST_ZOOKEEPER_JAR), installed here with apt-get when missing.
if [ -z "${FENCEGW_TEST_ZOOKEEPER_JAR:-}" ] && [ ! -e /usr/share/java/zookeeper.jar ]; then
	install_or_warn "the ZooKeeper server" ZooKeeper zookeeper
fi

# Chromium: the browser tests of the web page (gateway/ui/ui_browser_test.go)
# run Debian's chromium headless (or FENCEGW_CHROMIUM), installed here with
# apt-get when missing.
if [ -z "${FENCEGW_CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null &&
	! command -v google-chrome >/dev/null && ! command -v google-chrome-stable >/dev/null; then
	install_or_warn "Chromium" browser chromium
fi

# quick: the edit-test loop. Unit tests and the conformance suites on the
# embedded store, without the race detector, the PostgreSQL, etcd, Redis
# and ZooKeeper backends, kube-apiserver, the process tests, the benchmarks
# and the fault suite; with
# -short, so the slow tests (floods, long waits) are left to the full run.
if [ "${1:-}" = quick ]; then
	go vet ./...
	exec go test -short -count=1 -timeout 10m $(go list ./... | grep -vE '/(faults|bench)(/|$)|/cmd/fencegw$|/(pgstore|etcdstore|pgsource|etcdsource|redissource|zksource|kubesource)$|/internal/testutil/(testpg|testetcd|testredis|testzk|testkube)$|/cmd/fencegw/internal/demo$')
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
# A heartbeat every 25 s from here to the end of the tests says what runs,
# so a long step never leaves the run silent: vet or staticcheck, then how
# many packages are done, which are not yet and, while the fault suite
# runs, its case (FENCEGW_FAULTS_PROGRESS).
work=$(mktemp -d)
trap 'rm -rf "$work" "${kube_work:-}"' EXIT
step_file=$work/step          # the step running: vet, staticcheck or tests
test_log=$work/test.log       # go test's output
faults_progress=$work/faults-progress
faults_report=$work/faults-report # the fault suite's tables, printed once the tests passed
echo vet >"$step_file"
: >"$test_log"
: >"$faults_progress"
: >"$faults_report"
packages=$(go list ./...)
total=$(echo "$packages" | wc -l)
start=$(date +%s)
# heartbeat_line prints the heartbeat's line for step $1, go test's output
# so far in file $2 and the fault suite's progress file $3.
heartbeat_line() {
	local step=$1 log=$2 progress=$3 done_n pending faults_case=""
	if [ "$step" != tests ]; then
		if [ "$step" = "kube tests" ] && [ -s "$progress" ]; then
			faults_case="; faults at $(tail -n 1 "$progress")"
		fi
		echo "[test] $(($(date +%s) - start)) s: $step running$faults_case"
		return
	fi
	done_n=$(grep -cE '^(ok|FAIL|\?)[[:space:]]' "$log" || true)
	pending=$(for p in $packages; do grep -qE "^(ok|FAIL|\?)[[:space:]]+$p([[:space:]]|$)" "$log" || echo "$p"; done | head -3 | sed 's|^github.com/fencegw/fencegw/||' | paste -sd, -)
	if ! grep -qE '^(ok|FAIL|\?)[[:space:]]+[^[:space:]]*/faults([[:space:]]|$)' "$log" && [ -s "$progress" ]; then
		faults_case="; faults at $(tail -n 1 "$progress")"
	fi
	echo "[test] $(($(date +%s) - start)) s: $done_n of $total packages done; waiting on ${pending:-none}$faults_case"
}
(
	set +e +o pipefail # head ends the listing early: not an error here
	while sleep 25; do
		heartbeat_line "$(cat "$step_file")" "$test_log" "$faults_progress"
	done
) &
heartbeat=$!
trap 'kill "$heartbeat" 2>/dev/null || true; rm -rf "$work" "${kube_work:-}"' EXIT
echo "go vet"
go vet ./...
# staticcheck at a pinned version, from the module cache once downloaded
# (the file proxy first: no network needed then).
echo "staticcheck"
echo staticcheck >"$step_file"
GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" \
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo tests >"$step_file"
set +e
main_packages=$(go list ./... | grep -vE '/tokens/source/kubesource$|/internal/testutil/testkube$')
FENCEGW_FAULTS_REPORT=$faults_report FENCEGW_FAULTS_PROGRESS=$faults_progress \
	go test -race -count=1 -timeout 25m -skip "$kube_tests" $main_packages 2>&1 | tee "$test_log"
status=${PIPESTATUS[0]}
# The kube-apiserver tests, once its build has ended (testkube fails them
# under CI=true, or skips them, when the build failed).
if [ -n "$kube_pid" ]; then
	echo "kube-apiserver build" >"$step_file"
	wait "$kube_pid"
	echo tests >"$step_file"
fi
echo "kube-apiserver: $(cat "$FENCEGW_TEST_KUBE_STATUS")"
# The heartbeat says "kube tests running", with the fault suite's case
# once TestEpochSourcesKube has begun one.
echo "kube tests" >"$step_file"
: >"$faults_progress"
go test -race -count=1 -timeout 10m $kube_packages 2>&1 | tee -a "$test_log"
kube_status=${PIPESTATUS[0]}
FENCEGW_FAULTS_REPORT=$faults_report FENCEGW_FAULTS_PROGRESS=$faults_progress \
	go test -race -count=1 -timeout 10m -run "$kube_tests" $kube_test_packages 2>&1 | tee -a "$test_log"
[ "${PIPESTATUS[0]}" = 0 ] || kube_status=1
[ "$status" != 0 ] || status=$kube_status
set -e
kill "$heartbeat" 2>/dev/null || true
wait "$heartbeat" 2>/dev/null || true
if [ "$status" != 0 ]; then
	echo "tests failed (exit $status)"
	exit "$status"
fi
echo "fault suite:"
cat "$faults_report"

# Every fuzz target for a few seconds: new crashers fail the run.
fuzztime=${FUZZTIME:-5s}
# saved counts the inputs a fuzz target's corpus directory holds.
saved() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($fuzztime)"
		corpus="$dir/testdata/fuzz/$target"
		before=$(saved "$corpus")
		if ! out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
			echo "$out" >&2
			# A crasher is saved under testdata/fuzz and fails the run. A
			# failure that saved none (the fuzzing engine's own trouble on
			# a loaded machine) gets one more try.
			if [ "$(saved "$corpus")" != "$before" ]; then
				exit 1
			fi
			echo "fuzz $pkg $target: failed without a crasher; once more" >&2
			go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >&2
		fi
	done
done
echo "all tests passed"
