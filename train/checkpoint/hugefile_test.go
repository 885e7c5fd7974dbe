package checkpoint

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReadHugeStateAndConfig: a trainer_state.json or train_config.json of
// a gigabyte (a weights file copied to the wrong name, a corrupt write) is
// refused by its size, naming the file, not read whole into memory first,
// as peft.Read refuses such an adapter_config.json.
func TestReadHugeStateAndConfig(t *testing.T) {
	r := &Run{Dir: filepath.Join(t.TempDir(), "run")}
	if err := os.MkdirAll(r.StepDir(1), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{StateName, ConfigName} {
		f, err := os.Create(filepath.Join(r.StepDir(1), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(1 << 30); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for name, read := range map[string]func() error{
		StateName:  func() error { _, err := r.ReadState(1); return err },
		ConfigName: func() error { _, err := r.ReadConfig(1); return err },
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := read()
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(r.StepDir(1), name)) || !strings.Contains(err.Error(), "1073741824 bytes") {
			t.Errorf("%s: error %v does not name the file and its size", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<26 {
			t.Errorf("%s: allocated %d bytes to refuse it", name, got)
		}
	}
}
