package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestLogOptions(t *testing.T) {
	var o LogOptions
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--log-level", "warn", "--log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log, err := o.Logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "file", "a.parquet", "row", 3)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %q: %v", buf.String(), err)
	}
	if rec["msg"] != "shown" || rec["file"] != "a.parquet" || rec["row"] != 3.0 {
		t.Errorf("record %v", rec)
	}

	buf.Reset()
	log, err = LogOptions{Level: "debug", Format: "text"}.Logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("dbg", "k", "v")
	if !strings.Contains(buf.String(), "level=DEBUG msg=dbg k=v") {
		t.Errorf("text log %q", buf.String())
	}

	for _, bad := range []LogOptions{{Level: "loud"}, {Format: "xml"}} {
		if _, err := bad.Logger(&buf); ExitCode(err) != ExitUsage {
			t.Errorf("%+v: err %v, want a usage error", bad, err)
		}
	}
}
