package safetensors

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestShardedRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var tensors []Tensor
	for i, d := range []DType{F32, BF16, F16, F32, I64} {
		tensors = append(tensors, randomTensor(r, "layer."+string(rune('a'+i)), d, []int{4, 8}))
	}
	dir := t.TempDir()
	// 128 bytes per shard: the F32/I64 tensors (128 and 256 bytes) get their own shards.
	if err := WriteSharded(dir, tensors, 160, nil); err != nil {
		t.Fatal(err)
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
	if len(shards) < 2 {
		t.Fatalf("wanted several shards, got %v", shards)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Files()) != len(shards) {
		t.Errorf("opened %d files, wrote %d shards", len(s.Files()), len(shards))
	}
	if got := len(s.Names()); got != len(tensors) {
		t.Fatalf("%d names, want %d", got, len(tensors))
	}
	for _, want := range tensors {
		b, err := s.Bytes(want.Name)
		if err != nil || !bytes.Equal(b, want.Data) {
			t.Fatalf("%s: bytes differ (%v)", want.Name, err)
		}
		vals, err := s.Float32(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if w := wantFloat32(want.DType, want.Data, i); v != w {
				t.Fatalf("%s[%d] = %g, want %g", want.Name, i, v, w)
			}
		}
	}
	if _, err := s.Float32("absent"); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent tensor: %v", err)
	}
}

// TestHandWrittenIndex builds two shards and an index by hand, as a converter would.
func TestHandWrittenIndex(t *testing.T) {
	dir := t.TempDir()
	a := Tensor{Name: "model.embed_tokens.weight", DType: F32, Shape: []int{2}, Data: make([]byte, 8)}
	b := Tensor{Name: "model.norm.weight", DType: BF16, Shape: []int{3}, Data: make([]byte, 6)}
	write := func(name string, ts ...Tensor) {
		if err := Write(filepath.Join(dir, name), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	write("model-00001-of-00002.safetensors", a)
	write("model-00002-of-00002.safetensors", b)
	// A shard holding a tensor its index does not map to it.
	write("extra.safetensors", a, Tensor{Name: "lm_head.weight", DType: F32, Shape: []int{1}, Data: make([]byte, 4)})
	index := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, IndexName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index(`{"metadata":{"total_size":14},"weight_map":{"model.embed_tokens.weight":"model-00001-of-00002.safetensors","model.norm.weight":"model-00002-of-00002.safetensors"}}`)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, ok := s.Info("model.norm.weight")
	if !ok || info.DType != BF16 || len(info.Shape) != 1 || info.Shape[0] != 3 {
		t.Errorf("norm info %+v %v", info, ok)
	}
	s.Close()

	bad := map[string]string{
		"wrong shard":   `{"weight_map":{"model.embed_tokens.weight":"model-00002-of-00002.safetensors","model.norm.weight":"model-00002-of-00002.safetensors"}}`,
		"missing shard": `{"weight_map":{"model.embed_tokens.weight":"model-00009-of-00009.safetensors"}}`,
		"escape":        `{"weight_map":{"model.embed_tokens.weight":"../model-00001-of-00002.safetensors"}}`,
		"unlisted":      `{"weight_map":{"model.embed_tokens.weight":"model-00001-of-00002.safetensors"}}`,
		"empty map":     `{"weight_map":{}}`,
		"extra":         `{"weight_map":{"model.embed_tokens.weight":"extra.safetensors"}}`,
		"not json":      `{"weight_map":`,
	}
	want := map[string]string{
		"wrong shard": "does not hold", "missing shard": "no such file", "escape": "not a file name",
		"unlisted": "", "empty map": "empty", "not json": "unexpected end",
		"extra": `extra.safetensors holds "lm_head.weight", which`,
	}
	for name, body := range bad {
		index(body)
		s, err := Open(dir)
		if name == "unlisted" {
			// Shard 2 is not listed, so only shard 1 is opened: a valid subset.
			if err != nil {
				t.Errorf("%s: %v", name, err)
			} else {
				if s.Has("model.norm.weight") {
					t.Errorf("%s: unlisted tensor visible", name)
				}
				s.Close()
			}
			continue
		}
		if err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: error %q does not mention %q", name, err, want[name])
		}
	}
}

func TestOpenFolderVariants(t *testing.T) {
	tt := Tensor{Name: "w", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "no ") {
		t.Errorf("empty folder: %v", err)
	}
	if err := Write(filepath.Join(dir, "adapter_model.safetensors"), []Tensor{tt}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil || !s.Has("w") {
		t.Fatalf("single file folder: %v", err)
	}
	s.Close()
	if err := Write(filepath.Join(dir, "other.safetensors"), []Tensor{tt}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "2 *.safetensors") {
		t.Errorf("two loose files: %v", err)
	}
	if err := Write(filepath.Join(dir, "model.safetensors"), []Tensor{tt}, nil); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatalf("model.safetensors preferred: %v", err)
	}
	if p := s.Files()[0].Path(); filepath.Base(p) != "model.safetensors" {
		t.Errorf("opened %s", p)
	}
	s.Close()
	s, err = Open(filepath.Join(dir, "other.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// The index is read by its keys' exact names, as transformers reads it (a
// dict: index["weight_map"]): a "Weight_Map" key beside weight_map is a
// key of its own that nothing reads. encoding/json matched it case-
// insensitively and merged its tensors into the weight map, so a folder
// transformers loads was refused, or its tensors looked up in other shards.
func TestIndexKeysExact(t *testing.T) {
	dir := t.TempDir()
	a := Tensor{Name: "model.embed_tokens.weight", DType: F32, Shape: []int{2}, Data: make([]byte, 8)}
	if err := Write(filepath.Join(dir, "model-00001-of-00001.safetensors"), []Tensor{a}, nil); err != nil {
		t.Fatal(err)
	}
	body := `{"weight_map":{"model.embed_tokens.weight":"model-00001-of-00001.safetensors"},` +
		`"Weight_Map":{"lm_head.weight":"model-00009-of-00009.safetensors"}}`
	if err := os.WriteFile(filepath.Join(dir, IndexName), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Has(a.Name) || s.Has("lm_head.weight") {
		t.Errorf("tensors %v, want %s alone", s.Names(), a.Name)
	}
}

// TestOpenIndexHuge: an index of a gigabyte is refused by its size, naming
// the file, not read whole first.
func TestOpenIndexHuge(t *testing.T) {
	path := filepath.Join(t.TempDir(), IndexName)
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
	_, err = Open(filepath.Dir(path))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), IndexName) || !strings.Contains(err.Error(), "1073741824 bytes") {
		t.Fatalf("error %v does not name the file and its size", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<26 {
		t.Errorf("allocated %d bytes to refuse it", got)
	}
}
