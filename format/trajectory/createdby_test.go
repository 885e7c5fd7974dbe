package trajectory

import (
	"bytes"
	"context"
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// Parquet's created_by is "app version X (build Y)": readers parse it to
// tell which writer, and which release of it, made a file.
var createdByForm = regexp.MustCompile(`^hone version [^ ()]+( \(build [^ ()]+\))?$`)

// TestWriterCreatedBy reads the footer of a file the writer made: its
// created_by names hone and a version, in Parquet's form.
func TestWriterCreatedBy(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	for _, g := range sampleGroups(1, 1, 1) {
		if err := w.WriteGroup(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if got := pf.Metadata().CreatedBy; !createdByForm.MatchString(got) {
		t.Errorf("created_by %q, want the form %v", got, createdByForm)
	}
}

func TestCreatedByFromBuildInfo(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "hone version unknown"},
		{"go install at a tag", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}},
			"hone version v1.2.3"},
		{"go build in a clone", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261207101855-0123456789ab"},
			Settings: settings("vcs", "git", "vcs.revision", rev, "vcs.modified", "false")},
			"hone version v0.0.0-20261207101855-0123456789ab (build " + rev + ")"},
		{"local changes", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261207101855-0123456789ab+dirty"},
			Settings: settings("vcs.revision", rev, "vcs.modified", "true")},
			"hone version v0.0.0-20261207101855-0123456789ab+dirty (build " + rev + "-dirty)"},
		{"go run, no stamp", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}},
			"hone version devel"},
		{"a library of another program", &debug.BuildInfo{
			Main:     debug.Module{Path: "example.com/app", Version: "v9.0.0"},
			Deps:     []*debug.Module{{Path: "golang.org/x/text", Version: "v0.1.0"}, {Path: modulePath, Version: "v1.4.0"}},
			Settings: settings("vcs.revision", rev)}, // the program's revision, not hone's
			"hone version v1.4.0"},
		{"a replaced library", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.4.0", Replace: &debug.Module{Path: "../hone"}}}},
			"hone version v1.4.0"},
	}
	for _, c := range cases {
		got := createdBy(c.bi, c.bi != nil)
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if !createdByForm.MatchString(got) {
			t.Errorf("%s: %q is not of the form %v", c.name, got, createdByForm)
		}
	}
}
