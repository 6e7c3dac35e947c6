package main

import (
	"io"
	"log/slog"

	"github.com/fencegw/fencegw/telemetry"
)

// newLogger returns the process logger: JSON lines by default, text when
// asked, at the configured level; request-scoped lines carry the request's
// trace_id and span_id.
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	o := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, o)))
	}
	return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, o)))
}
