package vllm

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCheckFolderHugeConfig: a step folder whose adapter_config.json is a
// gigabyte (a weights file copied to the wrong name, a corrupt write) is
// refused by its size, naming the file, before vLLM is asked to load it;
// it was read whole into memory first.
func TestCheckFolderHugeConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "adapter_config.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = checkFolder(dir)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "1073741824 bytes") {
		t.Fatalf("error %v does not name the file and its size", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<26 {
		t.Errorf("allocated %d bytes to refuse it", got)
	}
}
