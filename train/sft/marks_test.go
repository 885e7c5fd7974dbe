package sft

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/train/trainer"
)

// TestTrainableMarksDecide: a trajectory that marks some assistant turns
// trainable (hone-collect and the proxy mark the turns the policy produced;
// an assistant message the agent wrote itself is left unmarked, as
// context) trains those turns alone, in a Parquet file and in a JSON Lines
// chat file alike; --turns last takes the last marked turn. A trajectory
// that marks none (a plain chat file) trains its assistant turns as before.
func TestTrainableMarksDecide(t *testing.T) {
	dir, md, _ := setup(t)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	user := func(s string) trajectory.Message { return trajectory.Message{Role: "user", Content: s} }
	asst := func(s string, mark bool) trajectory.Message {
		return trajectory.Message{Role: "assistant", Content: s, Trainable: mark}
	}
	// The policy answered the first question; the agent wrote the second
	// answer itself (unmarked), then the policy answered again, and the
	// agent closed the conversation.
	marked := []trajectory.Message{user("q0"), asst("a0", true), user("again"), asst("written by the agent", false), user("more"), asst("b5!", true), user("bye"), asst("the agent's goodbye", false)}
	plain := []trajectory.Message{user("q1"), asst("a1", false), user("again"), asst("b4!", false)}
	pq := filepath.Join(dir, "marks.parquet")
	if err := trajectory.WriteFile(context.Background(), pq, []trajectory.Group{{ID: "g", Trajectories: []trajectory.Trajectory{
		{ID: "marked", Messages: marked, Reward: trajectory.Float64(1)},
		{ID: "plain", Messages: plain, Reward: trajectory.Float64(1)},
	}}}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "marks.jsonl")
	if err := os.WriteFile(js, []byte(`{"messages": [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0", "trainable": true}, {"role": "user", "content": "again"}, {"role": "assistant", "content": "written by the agent"}, {"role": "user", "content": "more"}, {"role": "assistant", "content": "b5!", "trainable": true}, {"role": "user", "content": "bye"}, {"role": "assistant", "content": "the agent's goodbye"}]}
{"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "again"}, {"role": "assistant", "content": "b4!"}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	lay := func(msgs []trajectory.Message, trainable ...int) []layout.Sequence {
		msgs = slices.Clone(msgs)
		for i := range msgs {
			msgs[i].Trainable = slices.Contains(trainable, i)
		}
		l, err := text.Layout(context.Background(), msgs, nil, layout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Sequences
	}
	for _, in := range []string{pq, js} {
		for _, tc := range []struct {
			turns string
			want  [][]layout.Sequence
		}{
			{"all", [][]layout.Sequence{lay(marked, 1, 5), lay(plain, 1, 3)}},
			{"last", [][]layout.Sequence{lay(marked, 5), lay(plain, 3)}},
		} {
			d, err := Load(context.Background(), text, fileset.Files(in), tc.turns, nil, layout.Options{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Examples) != 2 {
				t.Fatalf("%s --turns %s: %d examples; want 2", filepath.Base(in), tc.turns, len(d.Examples))
			}
			for i, ex := range d.Examples {
				if got, want := ex.Trainable(), (&trainer.Example{Seqs: tc.want[i]}).Trainable(); got != want || !sameMasks(ex.Seqs, tc.want[i]) {
					t.Errorf("%s --turns %s, trajectory %d: %d trainable tokens (masks equal: %v); want %d, the marked turns' only",
						filepath.Base(in), tc.turns, i, got, sameMasks(ex.Seqs, tc.want[i]), want)
				}
			}
		}
	}
}

// sameMasks says whether two layouts have the same ids and trainable masks.
func sameMasks(a, b []layout.Sequence) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.Equal(a[i].IDs, b[i].IDs) || !slices.Equal(a[i].Trainable, b[i].Trainable) {
			return false
		}
	}
	return true
}

// TestTrainableFalseIsNotTrained: a chat line that says "trainable": false
// on an assistant turn, and true on none, keeps that turn as context and
// trains its other assistant turns. The false was read as no mark at all,
// so the line marked nothing and every assistant turn trained, the one
// the line excluded too.
func TestTrainableFalseIsNotTrained(t *testing.T) {
	dir, md, _ := setup(t)
	text, err := layout.LoadModel(md)
	if err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "false.jsonl")
	if err := os.WriteFile(js, []byte(`{"messages": [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "a bad answer", "trainable": false}, {"role": "user", "content": "again"}, {"role": "assistant", "content": "b1!"}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs := []trajectory.Message{
		{Role: "user", Content: "q0"}, {Role: "assistant", Content: "a bad answer"},
		{Role: "user", Content: "again"}, {Role: "assistant", Content: "b1!", Trainable: true},
	}
	want, err := text.Layout(context.Background(), msgs, nil, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, turns := range []string{"all", "last"} {
		d, err := Load(context.Background(), text, fileset.Files(js), turns, nil, layout.Options{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Examples) != 1 {
			t.Fatalf("--turns %s: %d examples; want 1", turns, len(d.Examples))
		}
		ex := d.Examples[0]
		if got, w := ex.Trainable(), (&trainer.Example{Seqs: want.Sequences}).Trainable(); got != w || !sameMasks(ex.Seqs, want.Sequences) {
			t.Errorf("--turns %s: %d trainable tokens (masks equal: %v); want %d, the last turn's only", turns, got, sameMasks(ex.Seqs, want.Sequences), w)
		}
	}
}
