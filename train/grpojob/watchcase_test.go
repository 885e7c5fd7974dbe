package grpojob

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatchWarnsOfUpperCaseParquet: a file of the watched folder named
// *.PARQUET (or another case of the extension) is not read, as no
// directory input reads it, but the call now names each such file in one
// warning, once, saying how to have it read. It was passed over without a
// word, and a writer that names its files so was never trained on.
func TestWatchWarnsOfUpperCaseParquet(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	watch := watchFolder(t, dir, md)
	writeGroups(t, md, filepath.Join(watch, "ROUND2.PARQUET"), 2, 3, varied)
	writeGroups(t, md, filepath.Join(watch, "round3.Parquet"), 2, 3, varied)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = watch, 0
	var log bytes.Buffer
	if err := runWith(context.Background(), backend(t), o, textLog(&log)); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, name := range []string{"ROUND2.PARQUET", "round3.Parquet"} {
		var warned int
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, name) && strings.Contains(line, "level=WARN") && strings.Contains(line, ".parquet") {
				warned++
			}
		}
		if warned != 1 {
			t.Errorf("%s named in %d warnings, want 1:\n%s", name, warned, log.String())
		}
	}
	if !strings.Contains(log.String(), `"training on new files" files=1`) {
		t.Errorf("want round1.parquet alone trained:\n%s", log.String())
	}
}
