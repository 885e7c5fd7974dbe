package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHelpAgreesWithDocs checks hone-inspect's help against README and
// docs/ where they describe the same thing: the commands README's table
// lists, the inputs the help says it takes (docs/cluster.md runs
// `hone-inspect stats 's3://…'`), the metrics log-eval writes, and the
// tokenizer files tokenize's --model takes.
func TestHelpAgreesWithDocs(t *testing.T) {
	readme := readDoc(t, "../../README.md")
	art := readDoc(t, "../../docs/art.md")

	// README's table of binaries names every command.
	row := regexp.MustCompile("(?m)^\\| `hone-inspect` \\|.*$").FindString(readme)
	if row == "" {
		t.Fatal("README has no table row for hone-inspect")
	}
	top := mustRun(t, nil, "--help").stdout
	cmds := regexp.MustCompile(`(?m)^  ([a-z-]+) {2,}`).FindAllStringSubmatch(top, -1)
	if len(cmds) < 10 {
		t.Fatalf("--help lists %d commands:\n%s", len(cmds), top)
	}
	for _, m := range cmds {
		if c := m[1]; c != "help" && c != "completion" && !strings.Contains(row, "`"+c+"`") {
			t.Errorf("README's hone-inspect row lacks `%s`: %s", c, row)
		}
	}

	// Object-store URLs are inputs too.
	if !strings.Contains(readDoc(t, "../../docs/cluster.md"), "hone-inspect stats 's3://") {
		t.Fatal("docs/cluster.md no longer runs hone-inspect stats on s3://")
	}
	if !strings.Contains(top, "s3://") {
		t.Errorf("--help does not say inputs may be object-store URLs:\n%s", top)
	}

	// log-eval's metrics, as its help lists them, in README and docs/art.md.
	help := mustRun(t, nil, "log-eval", "--help").stdout
	names := regexp.MustCompile(`(?m)^  SPLIT/([a-z_]+) `).FindAllStringSubmatch(help, -1)
	if len(names) < 4 {
		t.Fatalf("log-eval --help lists %d metrics:\n%s", len(names), help)
	}
	artRow := regexp.MustCompile("(?m)^\\|.*model.log\\(groups, split=\"val\"\\).*$").FindString(art)
	for _, m := range names {
		if strings.Contains(readme, "`val/reward`") && !strings.Contains(readme, "`val/"+m[1]+"`") {
			t.Errorf("README's log-eval paragraph lacks val/%s", m[1])
		}
		if !strings.Contains(artRow, "`val/"+m[1]+"`") {
			t.Errorf("docs/art.md's log-eval row lacks val/%s: %s", m[1], artRow)
		}
	}

	// tokenize --model takes a gzip-compressed tokenizer too.
	tok := mustRun(t, nil, "tokenize", "--help").stdout
	flag := regexp.MustCompile(`(?m)^ +--model string +(.*)$`).FindStringSubmatch(tok)
	if flag == nil || !strings.Contains(tok, "tokenizer.json.gz") || !strings.Contains(flag[1], ".gz") {
		t.Errorf("tokenize --help: --model %q does not say what the text says (tokenizer.json.gz)", flag)
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
