package trainer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/tinymodel"
)

// TestModelFolderErrorsAreBadInput: a model folder that is missing, or
// whose config.json does not parse, and an --init-adapter folder that is
// not an adapter, are bad input naming the folder; a good folder loads.
func TestModelFolderErrorsAreBadInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "model")
	if err := tinymodel.Write(context.Background(), good, tinymodel.Options{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1}, ref.New()); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken")
	if err := os.CopyFS(broken, os.DirFS(good)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "config.json"), []byte(`{"hidden_size": `), 0o644); err != nil {
		t.Fatal(err)
	}
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, md := range []string{filepath.Join(dir, "nonexistent"), broken} {
		o := defaultOptions()
		o.Model = md
		_, err := LoadBase(be, &o)
		if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), md) {
			t.Errorf("--model %s: %v, want bad input naming the folder", md, err)
		}
	}
	o := defaultOptions()
	o.Model, o.Out, o.Name, o.InitAdapter = good, dir, "r", broken
	base, err := LoadBase(be, &o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(context.Background(), base, &o, o, Fresh, nil); !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "--init-adapter") {
		t.Errorf("--init-adapter %s: %v, want bad input naming the flag", broken, err)
	}
}
