package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Names of the environment variables Setup interprets.
const (
	envServiceName        = "OTEL_SERVICE_NAME"
	envResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	envTracesExporter     = "OTEL_TRACES_EXPORTER"
	envTracesSampler      = "OTEL_TRACES_SAMPLER"
	envTracesSamplerArg   = "OTEL_TRACES_SAMPLER_ARG"
	envBSPScheduleDelay   = "OTEL_BSP_SCHEDULE_DELAY"
	envBSPExportTimeout   = "OTEL_BSP_EXPORT_TIMEOUT"
	envBSPMaxQueueSize    = "OTEL_BSP_MAX_QUEUE_SIZE"
	envBSPMaxExportBatch  = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"

	// The OTLP variables are OTEL_EXPORTER_OTLP_<X>, overridden by
	// OTEL_EXPORTER_OTLP_TRACES_<X>.
	envOTLP       = "OTEL_EXPORTER_OTLP_"
	envOTLPTraces = "OTEL_EXPORTER_OTLP_TRACES_"
)

// env looks up environment variables.
type env func(string) string

// get returns the trimmed value of the variable name.
func (e env) get(name string) string { return strings.TrimSpace(e(name)) }

// otlp returns the value of OTEL_EXPORTER_OTLP_TRACES_<suffix> if set, else
// of OTEL_EXPORTER_OTLP_<suffix>, and the name of the variable it came from
// (the traces one when neither is set).
func (e env) otlp(suffix string) (value, name string) {
	name = envOTLPTraces + suffix
	if v := e.get(name); v != "" {
		return v, name
	}
	if v := e.get(envOTLP + suffix); v != "" {
		return v, envOTLP + suffix
	}
	return "", name
}

// millis reads a positive (or, with zeroOK, non-negative) whole number of
// milliseconds; ok is false when the variable is unset.
func (e env) millis(name string, zeroOK bool) (d time.Duration, ok bool, err error) {
	n, ok, err := e.count(name, zeroOK)
	return time.Duration(n) * time.Millisecond, ok, err
}

// count reads a positive (or, with zeroOK, non-negative) integer; ok is
// false when the variable is unset.
func (e env) count(name string, zeroOK bool) (n int, ok bool, err error) {
	v := e.get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	switch {
	case err != nil:
		return 0, false, &EnvError{Var: name, Err: fmt.Errorf("not an integer: %w", err)}
	case n < 0 || n == 0 && !zeroOK:
		return 0, false, &EnvError{Var: name, Err: fmt.Errorf("%d is out of range", n)}
	}
	return n, true, nil
}

// parseResourceAttributes parses OTEL_RESOURCE_ATTRIBUTES: comma-separated
// key=value pairs whose values are percent-decoded. Empty items are skipped.
func parseResourceAttributes(s string) ([]attribute.KeyValue, error) {
	var attrs []attribute.KeyValue
	for i, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, found := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !found || k == "" {
			return nil, fmt.Errorf("item %d is not key=value", i+1)
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("item %d (%s): bad percent-encoding: %w", i+1, k, err)
		}
		attrs = append(attrs, attribute.String(k, val))
	}
	return attrs, nil
}

// errHeaderValue stands in for errors about header values, which must not be
// repeated because they often hold credentials.
var errHeaderValue = errors.New("bad percent-encoding in value")

// parseHeaders parses OTEL_EXPORTER_OTLP_HEADERS: comma-separated
// key=value pairs with percent-decoded values. Errors name the item and at
// most its key, never its value.
func parseHeaders(s string) (map[string]string, error) {
	h := make(map[string]string)
	for i, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, found := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !found {
			return nil, fmt.Errorf("item %d is not key=value", i+1)
		}
		if !validHeaderKey(k) {
			return nil, fmt.Errorf("item %d: key is not an HTTP token", i+1)
		}
		val, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("item %d (%s): %w", i+1, k, errHeaderValue)
		}
		h[k] = strings.TrimSpace(val)
	}
	return h, nil
}

// validHeaderKey reports whether k is an RFC 9110 token.
func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// oneOf returns an error listing the allowed values.
func oneOf(what, v string, allowed ...string) error {
	return fmt.Errorf("unsupported %s %q (supported: %s)", what, v, strings.Join(allowed, ", "))
}
