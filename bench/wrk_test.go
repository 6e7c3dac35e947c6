package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// body is the 40-byte JSON body of every benchmark write.
const body = `{"to":"a@example.com","invoice":1000123}`

// load is one wrk run's request: a POST of body with these headers.
type load struct {
	headers map[string]string
	// unique gives every request its own Fencing-Resource (first writes):
	// r-N, N counting up from first+1.
	unique bool
	first  int64
	// uniqueHeader, when set, is the header unique sets instead of
	// Fencing-Resource.
	uniqueHeader string
	// pace, when set, makes each connection wait a random 0–2×pace
	// (whole milliseconds) after an answer before its next request: a
	// load well below saturation, whose latencies are the path's own
	// rather than queueing behind other connections.
	pace time.Duration
}

// result is what one wrk run measured.
type result struct {
	rps    float64
	p99    time.Duration
	non2xx int64
	errors int64
	total  int64
}

// script writes the wrk Lua script for l and returns its path.
func (l load) script(dir string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\n", body)
	for k, v := range l.headers {
		fmt.Fprintf(&b, "wrk.headers[%q] = %q\n", k, v)
	}
	if l.unique {
		header := l.uniqueHeader
		if header == "" {
			header = "Fencing-Resource"
		}
		fmt.Fprintf(&b, "local n = %d\n", l.first)
		fmt.Fprintf(&b, `request = function()
  n = n + 1
  wrk.headers[%q] = "r-" .. n
  return wrk.format()
end
`, header)
	}
	if l.pace > 0 {
		fmt.Fprintf(&b, "delay = function() return math.random(0, %d) end\n", 2*l.pace.Milliseconds())
	}
	f, err := os.CreateTemp(dir, "load-*.lua")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return f.Name(), err
}

// runWrk drives url with l for d over conns connections from one thread,
// pinned to cpu when cpu >= 0.
func runWrk(dir, url string, l load, conns int, d time.Duration, cpu int) (result, error) {
	script, err := l.script(dir)
	if err != nil {
		return result{}, err
	}
	defer os.Remove(script)
	args := []string{"-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(d.Seconds())), "--latency",
		"-s", script, url}
	cmd := pinned(cpu, "wrk", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk %s: %w\n%s", url, err, out)
	}
	return parseWrk(string(out))
}

var (
	rpsRe      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	p99Re      = regexp.MustCompile(`\n\s+99%\s+([0-9.]+)(us|ms|s)`)
	non2xxRe   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	totalRe    = regexp.MustCompile(`(\d+) requests in`)
	sockErrsRe = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads wrk --latency output.
func parseWrk(out string) (result, error) {
	var r result
	m := rpsRe.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no Requests/sec in wrk output:\n%s", out)
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	if m := p99Re.FindStringSubmatch(out); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[m[2]]
		r.p99 = time.Duration(v * float64(unit))
	}
	if m := non2xxRe.FindStringSubmatch(out); m != nil {
		r.non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := totalRe.FindStringSubmatch(out); m != nil {
		r.total, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := sockErrsRe.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			r.errors += n
		}
	}
	return r, nil
}

// pinned is name args run on cpu (taskset) when cpu >= 0.
func pinned(cpu int, name string, args ...string) *exec.Cmd {
	if cpu < 0 {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", strconv.Itoa(cpu), name}, args...)...)
}

// lookPath finds a tool the benchmark needs, naming the package to install.
func lookPath(name, pkg string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			if q := filepath.Join(dir, name); isFile(q) {
				return q, nil
			}
		}
		return "", fmt.Errorf("%s not found: install Debian's %s (bench/run does)", name, pkg)
	}
	return p, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
