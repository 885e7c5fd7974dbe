package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/collect"
)

// TestTRLDocCollectFlags: every `hone-collect --flag` docs/trl.md's
// generation table names is a hone-collect flag, and a default it states
// in parentheses after one is that flag's default.
func TestTRLDocCollectFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/trl.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := cli.NewFlagSet("hone-collect", usage, io.Discard)
	var opts collect.Options
	var sf cli.StageFlags
	opts.AddFlags(fs)
	sf.AddFlags(fs, "output")
	_, table, found := strings.Cut(string(b), "\n| TRL | Hone |")
	if !found {
		t.Fatal("docs/trl.md has no table headed | TRL | Hone |")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	named := regexp.MustCompile("`hone-collect --([A-Za-z0-9_-]+)`(?: \\(([0-9.]+)\\))?")
	n := 0
	for _, m := range named.FindAllStringSubmatch(table, -1) {
		n++
		f := fs.Lookup(m[1])
		if f == nil {
			t.Errorf("docs/trl.md names hone-collect --%s, which hone-collect does not have", m[1])
			continue
		}
		if m[2] != "" && m[2] != f.DefValue {
			t.Errorf("docs/trl.md says hone-collect --%s defaults to %s; its default is %s", m[1], m[2], f.DefValue)
		}
	}
	if n < 6 {
		t.Errorf("only %d hone-collect flags found in the table: its form changed", n)
	}
}

// TestTRLDocSamplingDefaults: docs/trl.md's row for TRL's temperature
// and top_p says where the server's defaults come from, naming
// hone-serve's --generation-config default (read from the real binary's
// help) and vLLM's own (auto, the model's generation_config.json). The
// row said 1.0 on vLLM, whose default reads a lower temperature from the
// many models' files that set one.
func TestTRLDocSamplingDefaults(t *testing.T) {
	b, err := os.ReadFile("../../docs/trl.md")
	if err != nil {
		t.Fatal(err)
	}
	help, _ := exec.Command(filepath.Join(binDir, "hone-serve"), "--help").CombinedOutput()
	m := regexp.MustCompile(`--generation-config string[^\n]*\(default "([^"]+)"\)`).FindSubmatch(help)
	if m == nil {
		t.Fatalf("hone-serve --help gives no --generation-config default:\n%s", help)
	}
	var row string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `temperature`") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/trl.md has no row for TRL's temperature")
	}
	for _, want := range []string{"`hone-serve --generation-config " + string(m[1]) + "`", "`--generation-config auto`", "generation_config.json"} {
		if !strings.Contains(row, want) {
			t.Errorf("docs/trl.md's temperature row does not say %s:\n%s", want, row)
		}
	}
}
