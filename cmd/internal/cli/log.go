package cli

import (
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
)

// LogOptions are the logging flags every binary takes.
type LogOptions struct {
	Level  string // debug, info, warn, error
	Format string // text or json
}

// AddFlags registers --log-level and --log-format.
func (o *LogOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", "text", "log format on stderr: text or json")
}

// Logger builds the slog logger writing to w (stderr). An unknown level or
// format is a usage error.
func (o LogOptions) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch strings.ToLower(o.Level) {
	case "debug":
		level = slog.LevelDebug
	case "info", "":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, Usagef("--log-level %q: want debug, info, warn or error", o.Level)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(o.Format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	default:
		return nil, Usagef("--log-format %q: want text or json", o.Format)
	}
}
