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

// FuzzImportJSONL checks that import never panics, and that whatever it
// accepts survives export and import unchanged.
func FuzzImportJSONL(f *testing.F) {
	f.Add([]byte(foreignLog))
	var buf bytes.Buffer
	if err := ExportJSONL(&buf, sampleGroups(9, 2, 2)...); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"payload":{ "x" : [ 1 , 2 ] },"created_at":"2026-01-02T03:04:05.123+02:00"}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","latency_ms":1e300}]}`))
	f.Add([]byte("{}\n\n[]\n"))
	// A choice whose logprobs hold no tokens: it imported with empty, not
	// nil, token ids, which export leaves out and import reads back nil.
	f.Add([]byte(`{"messages_and_choices":[{"role":"user","content":"q"},{"finish_reason":"stop","message":{"role":"assistant","content":"a"},"logprobs":{"content":[]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		groups, _, err := ImportJSONL(ctx, bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := ExportJSONL(&out, groups...); err != nil {
			t.Fatalf("export of an accepted import failed: %v", err)
		}
		again, res, err := ImportJSONL(ctx, &out, "export.jsonl")
		if err != nil {
			t.Fatalf("re-import of our own export failed: %v\n%s", err, out.Bytes())
		}
		if res.GeneratedIDs != 0 || res.GeneratedGroupIDs != 0 {
			t.Fatalf("re-import generated ids: %+v", res)
		}
		diffGroups(t, groups, again)
	})
}
