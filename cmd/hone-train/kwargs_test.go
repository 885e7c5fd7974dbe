package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/train/tinymodel"
)

// writeKwargsRows writes path: one group of 3 scored trajectories per entry
// of kwargs, each row recording that entry as its chat template kwargs
// (metadata hone.chat_template_kwargs), or nothing for "".
func writeKwargsRows(t *testing.T, path string, kwargs ...string) {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(path), ".parquet")
	var gs []trajectory.Group
	for g, kw := range kwargs {
		grp := trajectory.Group{ID: fmt.Sprintf("%s-%d", name, g)}
		for i := range 3 {
			tr := trajectory.Trajectory{
				ID: fmt.Sprintf("%s-%d-%d", name, g, i), GroupID: grp.ID, Reward: trajectory.Float64(float64(i)),
				Messages: []trajectory.Message{
					{Role: "user", Content: "go"},
					{Role: "assistant", Content: fmt.Sprintf("mv%d", i), Trainable: true, TokenIDs: []int32{'m', 'v', '0' + int32(i), 258}, Logprobs: []float32{-1, -1, -1, -1}, FinishReason: "stop"},
				},
			}
			if kw != "" {
				tr.Metadata = map[string]string{trajectory.MetadataKeyChatTemplateKwargs: kw}
			}
			grp.Trajectories = append(grp.Trajectories, tr)
		}
		gs = append(gs, grp)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trajectory.WriteFile(context.Background(), path, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRecordedChatTemplateKwargs: rows that record the chat template kwargs
// they were served with (hone-collect --chat-template-kwargs, the proxy)
// were laid out without them unless --chat-template-kwargs was given
// again, and a flag that disagreed with them, or rows that disagreed
// among themselves, trained silently under another prompt than the model
// saw. Now sft and grpo lay such rows out under their recorded kwargs, and
// refuse (exit 2) a flag that differs from them, naming the row and both
// values. Rows that record different kwargs were refused too, though
// each is laid out under its own, so mixed thinking/non-thinking Qwen3
// data had to be trained in separate calls; such rows now train together,
// each under its record. The model's template prints the kwarg "prefix"
// before the conversation, so a step's token count shows which prompt the
// rows were laid out under.
func TestRecordedChatTemplateKwargs(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	tmpl := "{%- if prefix is defined %}{{- prefix }}{%- endif %}" + tinymodel.ChatTemplate
	if err := os.WriteFile(filepath.Join(md, "chat_template.jinja"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "in", "plain.parquet")
	rec := filepath.Join(dir, "in", "rec.parquet")
	mixed := filepath.Join(dir, "in", "mixed.parquet")
	recQ := filepath.Join(dir, "in", "recq.parquet")
	writeKwargsRows(t, plain, "", "")
	writeKwargsRows(t, rec, `{"prefix":"PPPPPPPP"}`, `{"prefix":"PPPPPPPP"}`)
	writeKwargsRows(t, mixed, `{"prefix":"PPPPPPPP"}`, `{"prefix":"Q"}`)
	writeKwargsRows(t, recQ, `{"prefix":"Q"}`, `{"prefix":"Q"}`)
	out := filepath.Join(dir, "adapters")
	runs := 0
	train := func(job, in string, extra ...string) (int, string, float64) {
		runs++
		run := fmt.Sprintf("r%d", runs)
		args := append([]string{job, "--model", md, "--run", run, "--out", out, "--rank", "2", "--threads", "1", "--steps", "1"}, extra...)
		if job == "sft" {
			args = append(args, "--batch-size", "0")
		}
		code, msg := runMain(t, append(args, in)...)
		if code != 0 {
			return code, msg, 0
		}
		rows := stepMetrics(t, filepath.Join(out, run))
		if len(rows) != 1 {
			t.Fatalf("%s %v: %d steps", job, extra, len(rows))
		}
		return code, msg, rows[0]["tokens"].(float64)
	}
	for _, job := range []string{"sft", "grpo"} {
		_, msg, bare := train(job, plain)
		_, msg2, flagged := train(job, plain, "--chat-template-kwargs", `{"prefix":"PPPPPPPP"}`)
		if bare == 0 || flagged <= bare {
			t.Fatalf("%s on unrecorded rows: %v tokens bare, %v with the flag; want more with it\n%s\n%s", job, bare, flagged, msg, msg2)
		}
		if code, msg, n := train(job, rec); code != 0 || n != flagged {
			t.Errorf("%s on recorded rows without the flag: exit %d, %v tokens; want %v, laid out under the recorded kwargs\n%s", job, code, n, flagged, msg)
		}
		if code, msg, n := train(job, rec, "--chat-template-kwargs", `{ "prefix" : "PPPPPPPP" }`); code != 0 || n != flagged {
			t.Errorf("%s on recorded rows with the same kwargs: exit %d, %v tokens; want %v\n%s", job, code, n, flagged, msg)
		}
		code, msg, _ := train(job, rec, "--chat-template-kwargs", `{"prefix":"Q"}`)
		if code != cli.ExitUsage || !strings.Contains(msg, rec+" row 0") || !strings.Contains(msg, `{"prefix":"PPPPPPPP"}`) || !strings.Contains(msg, `{"prefix":"Q"}`) || !strings.Contains(msg, "--chat-template-kwargs") {
			t.Errorf("%s with a flag that differs from the rows: exit %d, want %d naming a row and both values\n%s", job, code, cli.ExitUsage, msg)
		}
		code, msg, q := train(job, recQ)
		if code != 0 || q >= flagged {
			t.Fatalf("%s on rows recording a shorter prefix: exit %d, %v tokens; want fewer than %v\n%s", job, code, q, flagged, msg)
		}
		// Each half of the mixed file is laid out under its own record:
		// its tokens are half of each uniform file's.
		if code, msg, n := train(job, mixed); code != 0 || n != (flagged+q)/2 {
			t.Errorf("%s on rows that record different kwargs: exit %d, %v tokens; want %v, each row under its own\n%s", job, code, n, (flagged+q)/2, msg)
		}
		code, msg, _ = train(job, mixed, "--chat-template-kwargs", `{"prefix":"Q"}`)
		if code != cli.ExitUsage || !strings.Contains(msg, mixed+" row 0") || !strings.Contains(msg, `{"prefix":"PPPPPPPP"}`) || !strings.Contains(msg, `{"prefix":"Q"}`) {
			t.Errorf("%s on mixed rows with a flag that differs from some: exit %d, want %d naming the row and both values\n%s", job, code, cli.ExitUsage, msg)
		}
	}
}

// TestResumeWithRecordedKwargsFlag: on rows that all record their chat
// template kwargs, --chat-template-kwargs lays out no row (each is laid
// out under its record, and a flag that differs is refused), so a resume
// that adds the flag with the rows' value, or drops it, trains what the
// run trained. It was refused as a changed option ("run has it unset,
// command gives ..."). On rows that record none the flag is what lays them
// out, and a resume that adds it is still refused.
func TestResumeWithRecordedKwargsFlag(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	rec := filepath.Join(dir, "in", "rec.parquet")
	plain := filepath.Join(dir, "in", "plain.parquet")
	writeKwargsRows(t, rec, `{"prefix":"P"}`, `{"prefix":"P"}`)
	writeKwargsRows(t, plain, "", "")
	out := filepath.Join(dir, "adapters")
	flag := []string{"--chat-template-kwargs", `{"prefix": "P"}`}
	for _, job := range []string{"sft", "grpo"} {
		for _, c := range []struct {
			name        string
			in          string
			first, then []string
			want        int
		}{
			{"add", rec, nil, flag, 0},
			{"drop", rec, flag, nil, 0},
			{"add-unrecorded", plain, nil, flag, cli.ExitUsage},
		} {
			run := job + "-" + c.name
			train := func(steps string, extra []string, more ...string) (int, string) {
				args := []string{job, "--model", md, "--run", run, "--out", out, "--rank", "2", "--threads", "1", "--steps", steps}
				if job == "sft" {
					args = append(args, "--batch-size", "1")
				} else {
					args = append(args, "--groups-per-step", "1")
				}
				args = append(append(args, extra...), more...)
				return runMain(t, append(args, c.in)...)
			}
			if code, msg := train("1", c.first); code != 0 {
				t.Fatalf("%s: first call: exit %d\n%s", run, code, msg)
			}
			code, msg := train("2", c.then, "--resume")
			if code != c.want {
				t.Errorf("%s: resume: exit %d, want %d\n%s", run, code, c.want, msg)
			}
			if c.want != 0 {
				if !strings.Contains(msg, `option "chat_template_kwargs" differs`) {
					t.Errorf("%s: refused without naming the option:\n%s", run, msg)
				}
				continue
			}
			if n := len(stepMetrics(t, filepath.Join(out, run))); n != 2 {
				t.Errorf("%s: %d steps after the resume, want 2", run, n)
			}
		}
	}
}

// TestKwargsFlagKeptOverIdleSession: a grpo session on rows that all
// record their kwargs may leave --chat-template-kwargs out (it lays out
// none of them), and the run keeps its value: a later session on rows
// that record none, given the run's flag again, continues. The idle
// session's steps saved the command's (no flag), so that later session
// was refused as a changed option, and one without the flag would have
// laid its rows out under other kwargs than the run's first.
func TestKwargsFlagKeptOverIdleSession(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	first := filepath.Join(dir, "in", "first.parquet")
	rec := filepath.Join(dir, "in", "rec.parquet")
	third := filepath.Join(dir, "in", "third.parquet")
	writeKwargsRows(t, first, "", "")
	writeKwargsRows(t, rec, `{"prefix":"P"}`, `{"prefix":"P"}`)
	writeKwargsRows(t, third, "", "")
	out := filepath.Join(dir, "adapters")
	flag := []string{"--chat-template-kwargs", `{"prefix":"P"}`}
	train := func(in string, extra ...string) (int, string) {
		args := []string{"grpo", "--model", md, "--run", "r", "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", "--resume"}
		return runMain(t, append(append(args, extra...), in)...)
	}
	if code, msg := train(first, flag...); code != 0 {
		t.Fatalf("first session: exit %d\n%s", code, msg)
	}
	if code, msg := train(rec); code != 0 {
		t.Fatalf("session on recorded rows without the flag: exit %d\n%s", code, msg)
	}
	if code, msg := train(third, flag...); code != 0 {
		t.Errorf("later session on unrecorded rows with the run's flag: exit %d, want 0\n%s", code, msg)
	}
	if n := len(stepMetrics(t, filepath.Join(out, "r"))); n != 3 {
		t.Errorf("%d steps, want 3", n)
	}
}
