package runfolder

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/fileset/s3test"
)

// TestPullReadsDamagedRecordAsNone: a record of steps pulled (pulledName)
// that does not parse (cut short by a full disk, written by an older
// hone) only spares downloads: the pull goes on as if there were none.
// Before, every pull of the run failed until someone deleted the file,
// and hone-serve never moved the run on again.
func TestPullReadsDamagedRecordAsNone(t *testing.T) {
	train := filepath.Join(t.TempDir(), "r")
	for n := 1; n <= 2; n++ {
		writeStepFiles(t, train, n, "adapter_model.safetensors")
	}
	if err := WritePointer(train, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	store := srv.URL("bkt", "adapters/r")
	if _, err := Publish(context.Background(), train, store); err != nil {
		t.Fatal(err)
	}
	serve := filepath.Join(t.TempDir(), "r")
	if err := os.MkdirAll(serve, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(serve, pulledName), []byte(`{"from":-1,"steps":[{"na`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Pull(context.Background(), store, serve, PullOptions{})
	if err != nil {
		t.Fatalf("pull over a damaged %s: %v", pulledName, err)
	}
	if want := []int{1, 2}; !slices.Equal(got, want) {
		t.Errorf("pulled %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(serve, pulledName)); !os.IsNotExist(err) {
		t.Errorf("%s after the pull: %v, want it gone", pulledName, err)
	}
}
