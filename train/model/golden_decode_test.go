package model

import (
	"context"
	"fmt"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestGoldenDecode decodes the golden cases through the KV cache, as serve
// does (Step: a prompt prefill, then one token a step, every live sequence
// in one step), and checks each step's logits against the reference's, with
// the adapter and without. TestStepMatchesFullForward compares Step with
// the model's own forward on micro configs; this holds the decode path to
// the independent reference on every config the goldens cover (Gemma 3's
// local and global layers with their two RoPEs, Mistral's window, biases,
// linear and llama3 rope scaling at positions past
// original_max_position_embeddings). Step starts every sequence at
// position 0, so the sequences of a case that start elsewhere are left out.
func TestGoldenDecode(t *testing.T) {
	for _, be := range kernelBackends(t) {
		for _, name := range goldenCases {
			for _, withAdapter := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/adapter=%v", be.Name(), name, withAdapter), func(t *testing.T) {
					checkGoldenDecode(t, be, name, withAdapter)
				})
			}
		}
	}
}

func checkGoldenDecode(t *testing.T, be kernels.Backend, name string, withAdapter bool) {
	ctx := context.Background()
	gc := loadGoldenCase(t, name, be)
	defer gc.ad.Free()
	defer gc.model.Close()
	m, b := gc.model, gc.batch
	want := gc.want.BaseLogits
	var ad *Adapter
	if withAdapter {
		ad, want = gc.ad, gc.want.Logits
	}
	// The sequences whose positions run 0, 1, 2, … from their start.
	var seqs []int
	for s := 0; s+1 < len(b.SeqOff); s++ {
		ok := true
		for i := b.SeqOff[s]; i < b.SeqOff[s+1]; i++ {
			ok = ok && b.Pos[i] == i-b.SeqOff[s]
		}
		if ok {
			seqs = append(seqs, s)
		}
	}
	if len(seqs) == 0 {
		t.Fatalf("golden case %s has no sequence starting at position 0 to decode", name)
	}
	V := m.Config.Vocab
	cache := NewContiguousCache(&m.Config, m.Backend())
	defer cache.Close()
	done := make([]int, len(b.SeqOff)-1)
	const prompt = 3
	for round := 0; ; round++ {
		var in []StepInput
		var which []int
		for _, s := range seqs {
			n := int(b.SeqOff[s+1] - b.SeqOff[s])
			if done[s] == n {
				continue
			}
			k := 1
			if round == 0 {
				k = min(prompt, n)
			}
			off := int(b.SeqOff[s]) + done[s]
			in = append(in, StepInput{Seq: s, IDs: b.IDs[off : off+k]})
			which = append(which, s)
		}
		if len(in) == 0 {
			break
		}
		out, err := m.Step(ctx, cache, in, ad)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range which {
			done[s] += len(in[i].IDs)
			row := int(b.SeqOff[s]) + done[s] - 1
			compare(t, fmt.Sprintf("step %d sequence %d position %d logits", round, s, done[s]-1), out[i*V:(i+1)*V], want[row], 1e-4)
		}
		m.FreeLogits(out)
		if t.Failed() {
			return
		}
	}
}
