#!/usr/bin/env bash
# Runs the whole test suite: formatting, vet, the race-enabled tests (which
# start their own throwaway PostgreSQL and embedded etcd), and a short pass
# of every fuzz target.
#
# PostgreSQL: the tests use FENCEGW_TEST_POSTGRES_DSN when set, otherwise
# they start a throwaway cluster from the server binaries under
# /usr/lib/postgresql/*/bin, installed here with apt-get when missing.
# Chromium (for the web page's browser tests) likewise.
# With CI=true a missing service fails the run instead of skipping tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${FENCEGW_TEST_POSTGRES_DSN:-}" ] && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing the PostgreSQL server binaries for the tests"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
	else
		echo "warning: no PostgreSQL server binaries; PostgreSQL tests will skip (or fail with CI=true)" >&2
	fi
fi

# Chromium: the browser tests of the web page (gateway/ui_browser_test.go)
# run Debian's chromium headless (or FENCEGW_CHROMIUM), installed here with
# apt-get when missing.
if [ -z "${FENCEGW_CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null &&
	! command -v google-chrome >/dev/null && ! command -v google-chrome-stable >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing Chromium for the browser tests"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	else
		echo "warning: no Chromium; browser tests will skip (or fail with CI=true)" >&2
	fi
fi

# quick: the edit-test loop. Unit tests and the conformance suites on the
# embedded store, without the race detector, the PostgreSQL and etcd
# backends, the process tests, the benchmarks and the fault suite.
if [ "${1:-}" = quick ]; then
	go vet ./...
	exec go test -count=1 -timeout 10m $(go list ./... | grep -vE '/(faults|bench)(/|$)|/cmd/fencegw$|/(pgstore|etcdstore|pgsource|etcdsource)$|/internal/testutil/(testpg|testetcd)$|/cmd/fencegw/internal/demo$')
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
echo "go vet"
go vet ./...
# The fault suite (faults/) appends its result tables here; they are
# printed once the tests passed.
faults_report=$(mktemp)
# A heartbeat every 25 s: how many packages are done and which are not yet,
# so a long package never leaves the run silent.
test_log=$(mktemp)
trap 'rm -f "$faults_report" "$test_log"' EXIT
packages=$(go list ./...)
total=$(echo "$packages" | wc -l)
start=$(date +%s)
(
	set +e +o pipefail # head ends the listing early: not an error here
	while sleep 25; do
		done_n=$(grep -cE '^(ok|FAIL|\?)[[:space:]]' "$test_log" || true)
		pending=$(for p in $packages; do grep -qE "^(ok|FAIL|\?)[[:space:]]+$p([[:space:]]|$)" "$test_log" || echo "$p"; done | head -3 | sed 's|.*/fencegw/||' | paste -sd, -)
		echo "[test] $(($(date +%s) - start)) s: $done_n of $total packages done; waiting on ${pending:-none}"
	done
) &
heartbeat=$!
set +e
FENCEGW_FAULTS_REPORT=$faults_report go test -race -count=1 -timeout 25m ./... 2>&1 | tee "$test_log"
status=${PIPESTATUS[0]}
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
