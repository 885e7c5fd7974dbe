package cudafake

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestPTXEntries: ptxEntries finds the kernels a regular expression of
// what a PTX entry line is finds, in every committed PTX module and in
// texts made to trip it (an entry mid-line, a name without its
// parenthesis, the text's first line, a name at the end of the text).
func TestPTXEntries(t *testing.T) {
	entry := regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	want := func(image []byte) []string {
		var names []string
		for _, m := range entry.FindAllSubmatch(image, -1) {
			names = append(names, string(m[1]))
		}
		return names
	}
	files, err := filepath.Glob(filepath.Join("..", "ptx", "*.ptx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed PTX (%v)", err)
	}
	kernels := 0
	for _, f := range files {
		image, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got := ptxEntries(image)
		if !slices.Equal(got, want(image)) {
			t.Errorf("%s: %v, want %v", f, got, want(image))
		}
		kernels += len(got)
	}
	if kernels < len(files) {
		t.Errorf("%d kernels in %d modules", kernels, len(files))
	}
	for _, text := range []string{
		".visible .entry first(\n.visible .entry second_2(\n",
		"x .visible .entry midline(\n.visible .entry kept(",
		".visible .entry noparen\n.visible .entry (\n.visible .entry bad-name(\n",
		"\n.visible .entry last",
		"",
	} {
		if got := ptxEntries([]byte(text)); !slices.Equal(got, want([]byte(text))) {
			t.Errorf("%q: %v, want %v", text, got, want([]byte(text)))
		}
	}
}
