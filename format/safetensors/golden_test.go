package safetensors

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const goldenDir = "testdata/golden"

const rerun = "regenerate with: sh format/safetensors/testdata/golden/regen.sh"

func TestGoldenChecksums(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(goldenDir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err != nil {
			t.Fatalf("%v; %s", err, rerun)
		}
		h := sha256.Sum256(data)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: checksum differs from SHA256SUMS; %s", name, rerun)
		}
	}
}

// TestGoldenTorchFile reads a file whose bytes torch produced (every dtype torch has,
// f16/bf16 specials and subnormals) and compares each element with the value torch
// printed for it.
func TestGoldenTorchFile(t *testing.T) {
	s, err := Open(filepath.Join(goldenDir, "mixed.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := os.ReadFile(filepath.Join(goldenDir, "values.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]struct {
		DType  DType    `json:"dtype"`
		Shape  []int    `json:"shape"`
		Values []string `json:"values"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(s.Names()) != len(want) {
		t.Fatalf("%d tensors, values.json has %d", len(s.Names()), len(want))
	}
	if s.Metadata()["made_by"] != "make_golden.py" {
		t.Errorf("metadata %v", s.Metadata())
	}
	for name, w := range want {
		info, ok := s.Info(name)
		if !ok {
			t.Fatalf("missing %s", name)
		}
		if info.DType != w.DType || fmt.Sprint(info.Shape) != fmt.Sprint(w.Shape) {
			t.Errorf("%s: %s %v, want %s %v", name, info.DType, info.Shape, w.DType, w.Shape)
		}
		got, err := s.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(w.Values) {
			t.Fatalf("%s: %d values, want %d", name, len(got), len(w.Values))
		}
		for i, ws := range w.Values {
			v, err := strconv.ParseFloat(ws, 64)
			if err != nil {
				t.Fatal(err)
			}
			g := got[i]
			if math.IsNaN(v) {
				if !math.IsNaN(float64(g)) {
					t.Errorf("%s[%d] = %g, want NaN", name, i, g)
				}
				continue
			}
			if g != float32(v) || math.Signbit(float64(g)) != math.Signbit(v) {
				t.Errorf("%s[%d] = %g, want %s (%s)", name, i, g, ws, rerun)
			}
		}
	}
}
