// Package cmdcheck checks the commands themselves on a device: hone-train
// sft and grpo with --device cuda against the same runs with --device cpu
// (metrics and adapters within the bounds hone-train's own CUDA tests use),
// a grpo run stopped and resumed against the uninterrupted one (byte for
// byte), grpo with --cuda-sync edges against the synchronized run (bit
// for bit) and with --compute bf16 --cuda-attention gemm --bf16-gate-up against the CPU
// (BF16MetricTol), and hone-serve --device cuda answering, over HTTP, what
// hone-serve --device cpu answers, before and after an adapter is
// hot-reloaded.
//
// Its test binary is what the device check's hone-cmds step runs
// (kernels/cuda/gpucheck/run.sh); this file holds the pieces that test
// uses: the input file, reading and comparing what the runs wrote, and a
// client for a hone-serve process.
package cmdcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/format/trajectory"
)

// The bounds a CUDA run must agree with the CPU run within: those of
// hone-train's TestDeviceCUDATrains (cmd/hone-train/cuda_test.go, which
// says why): the step metrics relative to the CPU's value, the adapter
// tensors norm-wise (‖cuda − cpu‖₂ / ‖cpu‖₂ per tensor).
const (
	MetricTol  = 1e-4
	AdapterTol = 1e-3
)

// BF16MetricTol bounds the step metrics of a run in the bf16 precision
// (--compute bf16: bfloat16 operands on the frozen weights and in the
// tensor-core attention, float32 accumulation) against the CPU's f32
// compute on the same bfloat16 weights, relative: kernels.BF16ComputeTol.
const BF16MetricTol = 2e-2

// LogprobTol bounds the difference of an answer's token logprobs between
// hone-serve on the device and on the CPU (absolute): float32 rounding of
// two summation orders, about 1e-6 on the tiny models, far under it.
const LogprobTol = 1e-4

// MinAdapterShift is the least a published adapter must move the greedy
// answer's logprobs (when its tokens stay the base model's) for the check
// to tell the answer went through it.
const MinAdapterShift = 1e-3

// MetricKeys returns the per-step metrics compared between devices.
func MetricKeys() []string { return []string{"loss", "entropy", "grad_norm"} }

// WriteScored writes a scored trajectory file for the tiny models of
// train/tinymodel (hone-train init-model; byte-level tokenizer, 258 is
// <|im_end|>): groups groups of three trajectories "go" → "mvI" with
// rewards 0, 1, 2 and sampled logprobs, the shape of hone-train's own
// test fixture. sft trains its assistant turns, grpo its groups.
func WriteScored(ctx context.Context, path string, groups int) error {
	var gs []trajectory.Group
	for g := range groups {
		grp := trajectory.Group{ID: fmt.Sprintf("g%d", g)}
		for i := range 3 {
			ids := []int32{'m', 'v', '0' + int32((g+i)%10), 258}
			grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{
				ID: fmt.Sprintf("g%d-%d", g, i), GroupID: grp.ID, Reward: trajectory.Float64(float64(i)),
				Messages: []trajectory.Message{
					{Role: "user", Content: "go"},
					{Role: "assistant", Content: fmt.Sprintf("mv%d", (g+i)%10), Trainable: true, TokenIDs: ids,
						Logprobs: []float32{-1, -1.5, -2, -0.5}, FinishReason: "stop"},
				},
			})
		}
		gs = append(gs, grp)
	}
	if err := trajectory.WriteFile(ctx, path, gs, trajectory.WriterOptions{}); err != nil {
		return fmt.Errorf("scored fixture: %w", err)
	}
	return nil
}

// Metrics reads every row of a run folder's metrics.jsonl.
func Metrics(run string) ([]map[string]any, error) {
	path := filepath.Join(run, runfolder.MetricsName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []map[string]any
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		rows = append(rows, m)
	}
	return rows, nil
}

// CompareMetrics checks that the run folder got holds as many metrics rows
// as want, and that in every row each of MetricKeys() is within tol of
// want's, relative to want's value. It returns the largest relative error.
func CompareMetrics(want, got string, tol float64) (float64, error) {
	w, err := Metrics(want)
	if err != nil {
		return 0, err
	}
	g, err := Metrics(got)
	if err != nil {
		return 0, err
	}
	if len(g) != len(w) {
		return 0, fmt.Errorf("%s has %d metrics rows, %s %d", got, len(g), want, len(w))
	}
	worst := 0.0
	for i := range w {
		for _, k := range MetricKeys() {
			wv, okw := w[i][k].(float64)
			gv, okg := g[i][k].(float64)
			if !okw || !okg {
				return worst, fmt.Errorf("metrics row %d: %s is %v in %s, %v in %s", i+1, k, g[i][k], got, w[i][k], want)
			}
			rel := math.Abs(gv - wv)
			if wv != 0 {
				rel /= math.Abs(wv)
			}
			if math.IsNaN(rel) || rel > tol {
				return rel, fmt.Errorf("metrics row %d: %s %v in %s, %v in %s: relative error %.3g over %g", i+1, k, gv, got, wv, want, rel, tol)
			}
			worst = max(worst, rel)
		}
	}
	return worst, nil
}

// Adapter reads every tensor of the PEFT adapter in a step folder as float32.
func Adapter(step string) (map[string][]float32, error) {
	f, err := safetensors.OpenFile(filepath.Join(step, peft.WeightsName))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string][]float32{}
	for _, name := range f.Names() {
		v, err := f.Float32(name)
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", step, name, err)
		}
		m[name] = v
	}
	return m, nil
}

// CompareAdapters checks that the adapters of two step folders hold the
// same tensors and that each of got's is within tol of want's, norm-wise.
// It returns the largest relative error.
func CompareAdapters(want, got string, tol float64) (float64, error) {
	w, err := Adapter(want)
	if err != nil {
		return 0, err
	}
	g, err := Adapter(got)
	if err != nil {
		return 0, err
	}
	if len(g) != len(w) || len(w) == 0 {
		return 0, fmt.Errorf("%s holds %d adapter tensors, %s %d", got, len(g), want, len(w))
	}
	worst := 0.0
	for _, name := range slices.Sorted(maps.Keys(w)) {
		wv, gv := w[name], g[name]
		if len(gv) != len(wv) {
			return worst, fmt.Errorf("tensor %s: %d values in %s, %d in %s", name, len(gv), got, len(wv), want)
		}
		var diff, norm float64
		for i := range wv {
			d := float64(gv[i]) - float64(wv[i])
			diff += d * d
			norm += float64(wv[i]) * float64(wv[i])
		}
		rel := math.Sqrt(diff / norm)
		if norm == 0 || math.IsNaN(rel) || rel > tol {
			return rel, fmt.Errorf("tensor %s: ‖%s − %s‖ / ‖%s‖ = %.3g, want ≤ %g", name, got, want, want, rel, tol)
		}
		worst = max(worst, rel)
	}
	return worst, nil
}

// SameFiles checks that each named file is byte for byte the same in the
// folders a and b.
func SameFiles(a, b string, names ...string) error {
	for _, n := range names {
		x, err := os.ReadFile(filepath.Join(a, n))
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(b, n))
		if err != nil {
			return err
		}
		if !bytes.Equal(x, y) {
			return fmt.Errorf("%s differs between %s and %s", n, a, b)
		}
	}
	return nil
}

// SameMetrics checks that two runs' metrics rows hold the same step
// numbers and bit-identical MetricKeys() values.
func SameMetrics(a, b string) error {
	x, err := Metrics(a)
	if err != nil {
		return err
	}
	y, err := Metrics(b)
	if err != nil {
		return err
	}
	if len(x) != len(y) {
		return fmt.Errorf("%s has %d metrics rows, %s %d", b, len(y), a, len(x))
	}
	for i := range x {
		for _, k := range append([]string{"step"}, MetricKeys()...) {
			if x[i][k] != y[i][k] {
				return fmt.Errorf("metrics row %d: %s %v in %s, %v in %s", i+1, k, y[i][k], b, x[i][k], a)
			}
		}
	}
	return nil
}

// PublishStep copies the PEFT adapter (config and weights) of the step
// folder src into adapters/run/step-N and then points adapters/run/latest
// at it, as hone-train publishes a step: a hone-serve watching adapters
// loads it as "run".
func PublishStep(src, adapters, run string, n int) error {
	runDir := filepath.Join(adapters, run)
	dst := filepath.Join(runDir, runfolder.StepName(n))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, name := range []string{peft.ConfigName, peft.WeightsName} {
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return runfolder.WritePointer(runDir, runfolder.LatestName, n)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
