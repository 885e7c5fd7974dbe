package trajectory

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

func validFileBytes(t testing.TB) []byte {
	var buf bytes.Buffer
	// Small on purpose: the fuzzer mutates every byte, and a footer with
	// all our columns is already a few KB. Two row groups, one null reward.
	w := NewWriter(&buf, WriterOptions{RowGroupBytes: 1})
	for _, g := range []Group{
		{ID: "g1", Trajectories: []Trajectory{{ID: "a", Reward: Float64(1), Messages: []Message{
			{Role: "user", Content: "hi"},
			{Role: "assistant", Content: "yo", Trainable: true, TokenIDs: []int32{5, 6}, Logprobs: []float32{-1, -2}}}}}},
		{ID: "g2", Trajectories: []Trajectory{{ID: "b", Metrics: map[string]float64{"m": 1}}, {ID: "c", Error: "x"}}},
	} {
		if err := w.WriteGroup(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzReadFile feeds arbitrary bytes to the reader. It must return groups
// or an error that names the file — never panic or hang.
func FuzzReadFile(f *testing.F) {
	valid := validFileBytes(f)
	f.Add(valid)
	for _, n := range []int{0, 3, 4, 8, 100, len(valid) / 2, len(valid) - 9, len(valid) - 8, len(valid) - 1} {
		f.Add(valid[:n])
	}
	// Flip bytes in the middle (data pages) and near the end (footer).
	for _, at := range []int{len(valid) / 3, len(valid) / 2, len(valid) - 40, len(valid) - 12} {
		c := bytes.Clone(valid)
		c[at] ^= 0xff
		f.Add(c)
	}
	f.Add([]byte("PAR1garbagePAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00PAR1"))
	f.Add([]byte(`{"messages": []}`))
	f.Add(bytes.Repeat([]byte{0xff}, 256))

	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.parquet"
		r, err := NewReader(name, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("open error does not name the file: %v", err)
			}
			return
		}
		defer r.Close()
		for range 10000 {
			_, err := r.Next(context.Background())
			if err == io.EOF {
				return
			}
			if err != nil {
				if !strings.Contains(err.Error(), name) {
					t.Fatalf("read error does not name the file: %v", err)
				}
				return
			}
		}
		t.Fatal("more than 10000 groups from a fuzz input")
	})
}

// TestCorruptInputsGiveClearErrors pins the seed cases that must fail.
func TestCorruptInputsGiveClearErrors(t *testing.T) {
	valid := validFileBytes(t)
	for name, data := range map[string][]byte{
		"empty":      nil,
		"truncated":  valid[:len(valid)/2],
		"no footer":  valid[:len(valid)-1],
		"garbage":    bytes.Repeat([]byte("x"), 1000),
		"json lines": []byte(`{"messages": []}` + "\n"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewReader("bad.parquet", bytes.NewReader(data), int64(len(data)))
			if err == nil || !strings.Contains(err.Error(), "bad.parquet: not a readable trajectory file") {
				t.Fatalf("error %v", err)
			}
		})
	}
}
