package grpojob

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/tinymodel"
	"github.com/hone-rl/hone/train/trainer"
)

// TestAdditionalHistoriesTrainAsTheirOwnSequences writes trajectories with
// additional histories (their own messages and tools) and checks that each
// trainable history is laid out alone, with its own tools, and packed as a
// sequence of its own (positions from 0, its own MicroBatch.Hist index)
// under its trajectory's item and advantage; a history without trainable
// tokens adds nothing, and one trainable history makes a trajectory whose
// main history has none trainable.
func TestAdditionalHistoriesTrainAsTheirOwnSequences(t *testing.T) {
	md := tinyModel(t, t.TempDir())
	toolsTemplate(t, md)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	turn := func(answer string, trainable bool) trajectory.Message {
		var ids []int32
		for _, id := range text.Tokenizer.Encode(answer, false) {
			ids = append(ids, int32(id))
		}
		ids = append(ids, 258) // <|im_end|>
		lps := make([]float32, len(ids))
		for k := range lps {
			lps[k] = -1 - 0.1*float32(k)
		}
		return trajectory.Message{Role: "assistant", Content: answer, Trainable: trainable, TokenIDs: ids, Logprobs: lps, FinishReason: "stop"}
	}
	main := []trajectory.Message{{Role: "system", Content: "play"}, {Role: "user", Content: "board 1"}, turn("move 4", true)}
	summary := trajectory.History{
		Messages: []trajectory.Message{{Role: "system", Content: "summarise"}, {Role: "user", Content: "the game so far"}, turn("x took the centre", true)},
		Tools:    []trajectory.Tool{{Type: "function", Name: "note", Description: "keep a note", Parameters: `{"type":"object","properties":{"text":{"type":"string"}}}`}},
	}
	contextOnly := trajectory.History{Messages: []trajectory.Message{{Role: "user", Content: "hello"}, turn("hi", false)}}
	sub := trajectory.History{Messages: []trajectory.Message{{Role: "user", Content: "check the rules"}, turn("rules ok", true)}}
	trajs := []trajectory.Trajectory{
		{ID: "t0", Messages: main, AdditionalHistories: []trajectory.History{summary}, Reward: trajectory.Float64(0)},
		{ID: "t1", Messages: main, AdditionalHistories: []trajectory.History{summary, contextOnly, sub}, Reward: trajectory.Float64(0.25)},
		// No trainable turn in the main history: the history carries it.
		{ID: "t2", Messages: main[:2], AdditionalHistories: []trajectory.History{sub}, Reward: trajectory.Float64(1)},
	}
	in := filepath.Join(t.TempDir(), "h.parquet")
	if err := trajectory.WriteFile(context.Background(), in, []trajectory.Group{{ID: "g", Trajectories: trajs}}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	_, gs := loadFixture(t, md, backend(t), in)
	if len(gs) != 1 || len(gs[0].Ex) != 3 {
		t.Fatalf("loaded %d groups", len(gs))
	}

	// Each history laid out alone, with its own tools.
	lay := func(msgs []trajectory.Message, tools []trajectory.Tool) []layout.Sequence {
		l, err := text.Layout(context.Background(), msgs, tools, layout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Sequences
	}
	withTools, withoutTools := lay(summary.Messages, summary.Tools), lay(summary.Messages, nil)
	if len(withTools) != 1 || reflect.DeepEqual(withTools[0].IDs, withoutTools[0].IDs) {
		t.Fatalf("the summary's tools do not change its layout; the test cannot tell them apart")
	}
	want := [][]layout.Sequence{
		append(lay(main, nil), withTools...),
		append(append(lay(main, nil), withTools...), lay(sub.Messages, nil)...), // contextOnly adds nothing
		lay(sub.Messages, nil),
	}
	for i, w := range want {
		if got := gs[0].Ex[i].Seqs; !sameSequences(got, w) {
			t.Errorf("trajectory %d: %d sequences laid out, want %d (main history, then each trainable history alone)", i, len(got), len(w))
		}
		if gs[0].Missing[i] != "" {
			t.Errorf("trajectory %d untrainable: %s", i, gs[0].Missing[i])
		}
	}

	// Every history of a trajectory takes the trajectory's advantage.
	exs, _, skip := batch(gs, []int{0}, grpo.ScaleGroup)
	if skip != "" {
		t.Fatal(skip)
	}
	adv := grpo.Advantages([][]float64{{0, 0.25, 1}}, grpo.ScaleGroup)[0]
	if len(exs) != 3 {
		t.Fatalf("%d examples trained, want 3", len(exs))
	}
	for i := range exs {
		if exs[i].Adv != adv[i] || len(exs[i].Seqs) != len(want[i]) {
			t.Errorf("example %d: advantage %v with %d sequences, want %v with %d", i, exs[i].Adv, len(exs[i].Seqs), adv[i], len(want[i]))
		}
	}
	mbs, err := trainer.Pack(exs, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(mbs) != 1 {
		t.Fatalf("%d micro-batches, want 1", len(mbs))
	}
	mb := mbs[0]
	var seqItem []int32 // example of each packed sequence
	var seqTrainable []int
	for i, e := range exs {
		for _, s := range e.Seqs {
			seqItem = append(seqItem, int32(i))
			seqTrainable = append(seqTrainable, (&trainer.Example{Seqs: []layout.Sequence{s}}).Trainable())
		}
	}
	if len(mb.Batch.SeqOff) != len(seqItem)+1 || !reflect.DeepEqual(mb.HistTokens, seqTrainable) {
		t.Fatalf("packed %d sequences with trainable tokens %v, want %d with %v", len(mb.Batch.SeqOff)-1, mb.HistTokens, len(seqItem), seqTrainable)
	}
	for s := range seqItem {
		start, end := mb.Batch.SeqOff[s], mb.Batch.SeqOff[s+1]
		if mb.Batch.Pos[start] != 0 || mb.Batch.Targets[end-1] != -1 {
			t.Errorf("sequence %d: starts at position %d, last target %d; want 0 and -1 (a sequence of its own)", s, mb.Batch.Pos[start], mb.Batch.Targets[end-1])
		}
	}
	for k, p := range mb.Pos {
		h := mb.Hist[k]
		if mb.Item[k] != seqItem[h] || p < int(mb.Batch.SeqOff[h]) || p >= int(mb.Batch.SeqOff[h+1]) {
			t.Fatalf("trainable position %d: item %d, history %d; want item %d and a position inside history %d", p, mb.Item[k], h, seqItem[h], h)
		}
	}
	for i := range exs {
		if mb.Adv[i] != adv[i] || mb.ItemTokens[i] != exs[i].Trainable() {
			t.Errorf("item %d: advantage %v over %d tokens, want %v over %d", i, mb.Adv[i], mb.ItemTokens[i], adv[i], exs[i].Trainable())
		}
	}

	// --norm art splits them into one result per history, each with its
	// trajectory's advantage and weight.
	w := []float64{1, 2, 3}
	hs, hw := artHistories(exs, w)
	if len(hs) != len(seqItem) {
		t.Fatalf("--norm art: %d histories, want %d", len(hs), len(seqItem))
	}
	for k := range hs {
		if hs[k].Adv != exs[seqItem[k]].Adv || hw[k] != w[seqItem[k]] {
			t.Errorf("--norm art history %d: advantage %v weight %v, want those of trajectory %d", k, hs[k].Adv, hw[k], seqItem[k])
		}
	}
}

// sameSequences compares layouts, NaN logprobs (context tokens) equal.
func sameSequences(a, b []layout.Sequence) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].IDs, b[i].IDs) || !reflect.DeepEqual(a[i].Trainable, b[i].Trainable) ||
			!reflect.DeepEqual(a[i].Turns, b[i].Turns) || len(a[i].Logprobs) != len(b[i].Logprobs) {
			return false
		}
		for j := range a[i].Logprobs {
			if math.Float32bits(a[i].Logprobs[j]) != math.Float32bits(b[i].Logprobs[j]) {
				return false
			}
		}
	}
	return true
}

// toolsTemplate gives the model folder md the tiny model's ChatML template
// with a line naming the tools offered first, so that a layout shows which
// tools it was given.
func toolsTemplate(t *testing.T, md string) {
	t.Helper()
	p := filepath.Join(md, "tokenizer_config.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = "{%- if tools %}{{- '<|im_start|>system\\ntools:' }}{%- for tool in tools %}{{- ' ' + tool['function']['name'] }}{%- endfor %}{{- '<|im_end|>\\n' }}{%- endif %}" + tinymodel.ChatTemplate
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBadAdditionalHistoryNamesIt checks that a history that cannot be
// laid out is refused as bad input naming the row and the history.
func TestBadAdditionalHistoryNamesIt(t *testing.T) {
	md := tinyModel(t, t.TempDir())
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	tr := trajectory.Trajectory{ID: "t0", Reward: trajectory.Float64(1),
		Messages: []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a", Trainable: true}},
		AdditionalHistories: []trajectory.History{
			{Messages: []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a", Trainable: true}}},
			{Messages: []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a", Trainable: true, TokenIDs: []int32{5, -1}}}},
		}}
	in := filepath.Join(t.TempDir(), "bad.parquet")
	if err := trajectory.WriteFile(context.Background(), in, []trajectory.Group{{ID: "g", Trajectories: []trajectory.Trajectory{tr}}}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = loadGroups(context.Background(), text, fileset.Files(in), loadOptions{AllowNoLogprobs: true})
	if err == nil || !errors.Is(err, stageerr.ErrBadInput) {
		t.Fatalf("error %v, want bad input", err)
	}
	for _, s := range []string{in + " row 0", "trajectory t0", "additional_histories[1]", "negative id"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}
