package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
)

// TestIdleRatioFlagsWarned runs hone-train grpo as a process with ratio
// knobs that the rest of the call leaves nothing to act on:
// --kimi-k2-tau with --tis in its default recomputed mode (the ratio is
// then taken against logprobs recomputed with the step's own weights, so
// δ = ℓ − ℓ^old is exactly 0 and the shift −τ·δ is too), and
// --ratio-per-history with --norm art (every history is its own packed
// sequence there already). Each trains the adapter bit for bit as the
// call without the flag does, and warns once naming the flag and why;
// with --tis-mode sampler, or without --tis, --kimi-k2-tau acts and no
// warning is given. Before, both were taken without a word: an ART port
// setting kimi_k2_tau beside truncated importance sampling trained
// without the shift it asked for.
func TestIdleRatioFlagsWarned(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	train := func(t *testing.T, run string, extra ...string) ([]byte, string) {
		t.Helper()
		args := append([]string{"grpo", "--model", md, "--run", run, "--out", out, "--threads", "1", "--steps", "1"}, extra...)
		code, text := runMain(t, append(args, in)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", extra, code, text)
		}
		b, err := os.ReadFile(filepath.Join(out, run, runfolder.StepName(1), "adapter_model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b, text
	}
	for _, tc := range []struct {
		name        string
		base, extra []string
		want        []string // the one warning names each; nil: none, and the flag changes the adapter
	}{
		{"tau-recomputed-tis", []string{"--tis", "2"}, []string{"--kimi-k2-tau", "0.5"}, []string{"--kimi-k2-tau", "--tis", "--tis-mode sampler"}},
		{"per-history-norm-art", []string{"--norm", "art", "--ratio-level", "sequence"}, []string{"--ratio-per-history"}, []string{"--ratio-per-history", "--norm art"}},
		{"tau-sampler-tis", []string{"--tis", "2", "--tis-mode", "sampler"}, []string{"--kimi-k2-tau", "0.5"}, nil},
		{"tau-no-tis", nil, []string{"--kimi-k2-tau", "0.5"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			without, _ := train(t, tc.name+"-without", tc.base...)
			with, text := train(t, tc.name+"-with", append(append([]string{}, tc.base...), tc.extra...)...)
			checkDoesNothing(t, "grpo", tc.extra, text, tc.want)
			if same := bytes.Equal(with, without); same != (tc.want != nil) {
				t.Errorf("%v beside %v: adapter the same as without it: %v; want %v", tc.extra, tc.base, same, tc.want != nil)
			}
		})
	}
}
