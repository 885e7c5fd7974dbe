package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

func TestInitModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	var out bytes.Buffer
	args := []string{"init-model", "--family", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--dtype", "bf16", "--seed", "3", "-o", dir}
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(dir, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.Family != "qwen2" || c.Hidden != 32 || c.Layers != 1 || c.KVHeads != 2 || !c.QKVBias {
		t.Errorf("loaded config %+v", c)
	}
	// Running again into the now non-empty folder fails.
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args); err == nil {
		t.Error("init-model overwrote a model folder")
	}
}

func TestInitModelUsage(t *testing.T) {
	for _, args := range [][]string{
		{"init-model"},
		{"init-model", "--family", "gpt2", "-o", t.TempDir() + "/x"},
		{"init-model", "--no-such-flag"},
	} {
		var out bytes.Buffer
		err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args)
		if cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%v: exit code %d (%v), want usage", args, cli.ExitCode(err), err)
		}
	}
}
