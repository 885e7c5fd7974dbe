package grpojob

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
)

// runFiles trains on the input files of the command (o.Inputs), as one
// session of the run. The session is known by the sha256 of its files, in
// order: the files of the run's last session continue that session (a
// resume after a kill, or more --steps), other files begin the next one at
// the step the run has reached. Each session's data order is seeded by
// --seed plus its index, and --steps or --epochs count its own steps. The
// session is saved with every step (trainer_state.json "extra") and listed
// in the run's manifest.json.
func runFiles(ctx context.Context, prep *trainer.Prepared, o Options, gs []group, files []checkpoint.FileEntry, log *slog.Logger) error {
	prev, err := lastSession(prep, o, files)
	if err != nil {
		return err
	}
	var sess checkpoint.Session
	switch {
	case prev == nil:
		sess = checkpoint.Session{StartStep: prep.Done}
	case checkpoint.SameFiles(prev.Files, files):
		sess = *prev
	default:
		sess = checkpoint.Session{Index: prev.Index + 1, StartStep: prep.Done}
	}
	sess.Files = files
	per := o.GroupsPerStep
	if per == 0 || per > len(gs) {
		per = len(gs)
	}
	n := trainer.Order{N: len(gs), PerStep: per, CrossEpochs: o.StepsCrossEpochs}.StepsFor(o.Epochs)
	if o.Steps > 0 {
		n = o.Steps
	}
	sess.EndStep = sess.StartStep + n
	if prev != nil && sess.Index != prev.Index {
		log.Info("new session of the run", "session", sess.Index, "files", len(files), "first_step", sess.StartStep+1, "last_step", sess.EndStep)
		if err := warnTrainedAgain(prep, sess, log); err != nil {
			return err
		}
	}
	if sess.EndStep > prep.Done {
		if err := recordSession(prep.Ckpt, sess); err != nil {
			return err
		}
	}
	extra, err := json.Marshal(sess)
	if err != nil {
		return fmt.Errorf("grpo: session: %w", err)
	}
	return train(ctx, prep, o, gs, sess.StartStep, sess.EndStep, o.Seed+uint64(sess.Index), extra, log)
}

// warnTrainedAgain warns when a new session's files include ones that an
// earlier session, or a --watch-dir call, of the run already trained (by
// sha256, at steps the run still has). Naming a folder each round (files
// from earlier rounds included) trains them again in every session, which
// is rarely meant and otherwise silent; an extra epoch over a file on
// purpose is still allowed.
func warnTrainedAgain(prep *trainer.Prepared, sess checkpoint.Session, log *slog.Logger) error {
	man, err := prep.Ckpt.ReadManifest()
	if err != nil {
		return err
	}
	trained := map[string]string{} // sha256: where it was trained
	for _, s := range man.Sessions {
		if s.Index < sess.Index && s.StartStep < prep.Done {
			for _, f := range s.Files {
				trained[f.SHA256] = fmt.Sprintf("session %d (steps %d-%d)", s.Index, s.StartStep+1, s.EndStep)
			}
		}
	}
	for _, f := range man.Consumed {
		if f.Step <= prep.Done {
			trained[f.SHA256] = fmt.Sprintf("--watch-dir (by step %d)", f.Step)
		}
	}
	var again []string
	for _, f := range sess.Files {
		if where, ok := trained[f.SHA256]; ok {
			// Shown without an object's bucket query; the manifest
			// keeps the name as given.
			again = append(again, fmt.Sprintf("%s (trained in %s)", fileset.DisplayName(f.Path), where))
		}
	}
	if len(again) > 0 {
		log.Warn("files the run already trained on are trained again in this session; to train only new files, name them alone (a run started with --watch-dir DIR skips the files it consumed)",
			"session", sess.Index, "files", again)
	}
	return nil
}

// lastSession is the session of the run's latest step: nil for a fresh
// run. A step saved before sessions were recorded belongs to session 0,
// started at step 0, whose files are known only by the names saved in its
// config: the same names continue it.
func lastSession(prep *trainer.Prepared, o Options, files []checkpoint.FileEntry) (*checkpoint.Session, error) {
	if prep.Done == 0 {
		return nil, nil
	}
	if len(prep.State.Extra) > 0 {
		var s checkpoint.Session
		if err := json.Unmarshal(prep.State.Extra, &s); err != nil {
			return nil, fmt.Errorf("grpo: %s: session (\"extra\"): %w", filepath.Join(prep.Ckpt.StepDir(prep.Done), checkpoint.StateName), err)
		}
		return &s, nil
	}
	b, err := prep.Ckpt.ReadConfig(prep.Done)
	if err != nil {
		return nil, err
	}
	var saved struct {
		Inputs []string `json:"inputs"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("grpo: %s: %w", filepath.Join(prep.Ckpt.StepDir(prep.Done), checkpoint.ConfigName), err)
	}
	s := &checkpoint.Session{}
	if slices.Equal(saved.Inputs, o.Inputs.Names()) {
		s.Files = files // same names: taken to be session 0's files
	}
	return s, nil
}

// recordSession lists sess in the run's manifest, replacing the entries of
// its index and after (a session begun again after a kill, or after the
// run's latest was moved back).
func recordSession(run *checkpoint.Run, sess checkpoint.Session) error {
	man, err := run.ReadManifest()
	if err != nil {
		return err
	}
	kept := man.Sessions[:0]
	for _, s := range man.Sessions {
		if s.Index < sess.Index {
			kept = append(kept, s)
		}
	}
	man.Sessions = append(kept, sess)
	return run.WriteManifest(man)
}
