package cuda_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestDecodeBatchLaunchGeometry: AttentionDecodeBatch launches
// attention_decode_append, a block of 256 per 256 values of the longest
// sequence's new rows and a row of blocks per sequence, then
// attention_decode_batch, a block of 256 threads per 8 (query, head) rows
// of the longest sequence, per KV head and sequence; nothing for no tokens.
func TestDecodeBatchLaunchGeometry(t *testing.T) {
	caches := func(b func(int) *cuda.Buffer, kvd int, tk ...int) (k, v []*cuda.Buffer) {
		for _, n := range tk {
			k, v = append(k, b(n*kvd)), append(v, b(n*kvd))
		}
		return k, v
	}
	runOpsCases(t, []opsCase{
		{"Qwen2.5-0.5B decode step, 32 sequences", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			const S, H, KVH, D = 32, 14, 2, 64
			tk := make([]int, S)
			seqOff := make([]int32, S+1)
			for s := range S {
				tk[s], seqOff[s+1] = 100+s, int32(s+1)
			}
			kc, vc := caches(b, KVH*D, tk...)
			return o.AttentionDecodeBatch(b(S*H*D), b(S*H*D), b(S*KVH*D), b(S*KVH*D), kc, vc, seqOff, b(8*S), H, KVH, D, 0, 0.125)
		}, []cudafake.Launch{
			launch("attention_decode_append", dim(1, 32, 1), dim(256, 1, 1), 6),
			launch("attention_decode_batch", dim(1, 2, 32), dim(256, 1, 1), 10), // 7 heads a KV head: one block of 8 rows
		}},
		{"a prompt over a cache beside a decode step", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			const H, KVH, D = 4, 2, 128
			kc, vc := caches(b, KVH*D, 20, 9)
			return o.AttentionDecodeBatch(b(18*H*D), b(18*H*D), b(18*KVH*D), b(18*KVH*D), kc, vc, []int32{0, 17, 18}, b(16), H, KVH, D, 5, 0.09)
		}, []cudafake.Launch{
			launch("attention_decode_append", dim(17, 2, 1), dim(256, 1, 1), 6), // 17 rows of 256 values
			launch("attention_decode_batch", dim(5, 2, 2), dim(256, 1, 1), 10),  // 17·2 rows a KV head
		}},
		{"no tokens", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.AttentionDecodeBatch(nil, nil, nil, nil, []*cuda.Buffer{nil}, []*cuda.Buffer{nil}, []int32{0, 0}, nil, 2, 1, 8, 0, 1)
		}, nil},
	})
}

// TestDecodeBatchTable: the table the kernels read holds each sequence's
// first row, new tokens, cache rows and the offsets of its caches from the
// first sequence's (each from its own base), in floats, negative ones
// included, as (low, high) halves; Ops uploads it into the scratch buffer
// it is given.
func TestDecodeBatchTable(t *testing.T) {
	got := cuda.DecodeTable([]int32{0, 1, 4}, []int{7, 3}, []int64{0, -5 << 32}, []int64{0, 1<<32 + 3})
	want := []int32{0, 1, 7, 0, 0, 0, 0, 0, 1, 3, 3, 0, 0, -5, 3, 1}
	if !slices.Equal(got, want) {
		t.Errorf("DecodeTable = %v, want %v", got, want)
	}

	dev, o, _, _ := openFakeOps(t)
	b := deviceAlloc(t, dev)
	const H, KVH, D = 2, 1, 8
	v1, k1, v0, k0 := b(3*D), b(3*D), b(2*D), b(2*D) // sequence 1's caches at lower addresses than sequence 0's
	tab := b(20)
	if err := o.AttentionDecodeBatch(b(3*H*D), b(3*H*D), b(3*D), b(3*D), []*cuda.Buffer{k0, k1}, []*cuda.Buffer{v0, v1}, []int32{0, 1, 3}, tab, H, KVH, D, 0, 1); err != nil {
		t.Fatal(err)
	}
	raw := make([]float32, 20)
	if err := tab.Download(raw); err != nil {
		t.Fatal(err)
	}
	up := make([]int32, 16)
	for i := range up {
		up[i] = int32(math.Float32bits(raw[i]))
	}
	if up[0] != 0 || up[1] != 1 || up[2] != 2 || up[8] != 1 || up[9] != 2 || up[10] != 3 {
		t.Errorf("rows in the table: %v", up)
	}
	off := func(lo, hi int32) int64 { return int64(hi)<<32 | int64(uint32(lo)) }
	// The fake driver places allocations one after another, each 3·8 floats
	// here taking 256 bytes and a 4096-byte gap: sequence 1's caches lie
	// two allocations below sequence 0's.
	if k, v := off(up[12], up[13]), off(up[14], up[15]); k != -2*(256+4096)/4 || v != k {
		t.Errorf("sequence 1's cache offsets %d, %d: want %d, both", k, v, -2*(256+4096)/4)
	}
	if k, v := off(up[4], up[5]), off(up[6], up[7]); k != 0 || v != 0 {
		t.Errorf("sequence 0's cache offsets %d, %d: want 0, 0 (the bases)", k, v)
	}
}

// TestDecodeBatchArgumentChecks: AttentionDecodeBatch refuses caches that
// are missing, of different sizes for keys and values, not whole rows or
// shorter than the new tokens, a cache count other than the sequences', a
// negative window, decreasing offsets and a short table, naming the op,
// before launching.
func TestDecodeBatchArgumentChecks(t *testing.T) {
	dev, o, drv, _ := openFakeOps(t)
	b := deviceAlloc(t, dev)
	const H, KVH, D = 2, 1, 8
	x, kv := b(2*H*D), b(2*D)
	call := func(kc, vc []*cuda.Buffer, seqOff []int32, tab *cuda.Buffer, W int) func() error {
		return func() error { return o.AttentionDecodeBatch(x, x, kv, kv, kc, vc, seqOff, tab, H, KVH, D, W, 1) }
	}
	two := []int32{0, 1, 2}
	for _, c := range []struct {
		name string
		call func() error
		says string
	}{
		{"nil cache", call([]*cuda.Buffer{b(D), nil}, []*cuda.Buffer{b(D), nil}, two, b(16), 0), "sequence 1: a nil cache for 1 new tokens"},
		{"value cache shorter", call([]*cuda.Buffer{b(D), b(2 * D)}, []*cuda.Buffer{b(D), b(D)}, two, b(16), 0), "sequence 1: key cache of 16 elements, value cache of 8"},
		{"not whole rows", call([]*cuda.Buffer{b(D + 1), b(D)}, []*cuda.Buffer{b(D + 1), b(D)}, two, b(16), 0), "sequence 0: cache of 9 elements is not whole rows of KVH·D = 8"},
		{"more new tokens than cache", call([]*cuda.Buffer{b(D)}, []*cuda.Buffer{b(D)}, []int32{0, 2}, b(8), 0), "sequence 0: 2 new tokens over a cache of 1 rows"},
		{"one cache for two sequences", call([]*cuda.Buffer{b(D)}, []*cuda.Buffer{b(D)}, two, b(16), 0), "1 key and 1 value caches for 2 sequences"},
		{"negative window", call([]*cuda.Buffer{b(D), b(D)}, []*cuda.Buffer{b(D), b(D)}, two, b(16), -1), "window W = -1"},
		{"decreasing offsets", call([]*cuda.Buffer{b(2 * D), b(2 * D)}, []*cuda.Buffer{b(2 * D), b(2 * D)}, []int32{0, 2, 1}, b(16), 0), "seqOff decreases at 2"},
		{"short table", call([]*cuda.Buffer{b(D), b(D)}, []*cuda.Buffer{b(D), b(D)}, two, b(15), 0), "tab has 15 elements, shape needs 16"},
		{"seqOff not from 0", call([]*cuda.Buffer{b(D)}, []*cuda.Buffer{b(D)}, []int32{1, 2}, b(8), 0), "want offsets from 0"},
	} {
		if err := c.call(); err == nil || !strings.Contains(err.Error(), c.says) || !strings.HasPrefix(err.Error(), "CUDA AttentionDecodeBatch: ") {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.says)
		}
	}
	if l := drv.Launches(); len(l) != 0 {
		t.Errorf("refused calls launched %s", fmt.Sprint(l))
	}
}
