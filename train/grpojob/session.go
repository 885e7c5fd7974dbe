package grpojob

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
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
	sess.Groups = groupDigest(gs)
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
		if err := warnTrainedAgain(prep, sess, gs, log); err != nil {
			return err
		}
	}
	if sess.EndStep > prep.Done {
		if err := recordSession(prep.Ckpt, sess); err != nil {
			return err
		}
	} else if err := maskOldManifest(prep.Ckpt); err != nil {
		return err
	}
	// The state of each step keeps the session without its groups: the
	// manifest has them, and a step's state stays what it was before they
	// were kept.
	saved := sess.Redacted() // the files' names as the manifest keeps them
	saved.Groups = ""
	extra, err := json.Marshal(saved)
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
// purpose is still allowed. Groups of other files that an earlier session
// trained are warned of too (warnGroupsAgain).
func warnTrainedAgain(prep *trainer.Prepared, sess checkpoint.Session, gs []group, log *slog.Logger) error {
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
	seen := map[string]bool{} // files warned of here, whose groups are not named again
	for _, f := range sess.Files {
		if where, ok := trained[f.SHA256]; ok {
			seen[f.Path] = true
			// Shown without an object's bucket query; the manifest
			// keeps it with its secrets masked.
			again = append(again, fmt.Sprintf("%s (trained in %s)", fileset.DisplayName(f.Path), where))
		}
	}
	if len(again) > 0 {
		log.Warn("files the run already trained on are trained again in this session; to train only new files, name them alone (a run started with --watch-dir DIR skips the files it consumed)",
			"session", sess.Index, "files", again)
	}
	return warnGroupsAgain(prep, man, sess, gs, seen, log)
}

// warnGroupsAgain warns, once, when groups of files other than those seen
// have ids that an earlier session of the run (at steps the run still has)
// trained: the same groups in other bytes, as a file re-scored, or the
// proxy's file after a hone-score output made from it, has. Retraining
// may be meant, so it is never refused. An earlier session recorded
// without its groups is not checked.
func warnGroupsAgain(prep *trainer.Prepared, man checkpoint.Manifest, sess checkpoint.Session, gs []group, seen map[string]bool, log *slog.Logger) error {
	trained := map[uint64]int{} // group id digest: the session that trained it
	for _, s := range man.Sessions {
		if s.Index >= sess.Index || s.StartStep >= prep.Done || s.Groups == "" {
			continue
		}
		keys, err := digestKeys(s.Groups)
		if err != nil {
			return fmt.Errorf("grpo: %s: session %d: groups: %w", filepath.Join(prep.Ckpt.Dir, checkpoint.ManifestName), s.Index, err)
		}
		for _, k := range keys {
			trained[k] = s.Index
		}
	}
	n, ids, files, sessions := groupsAgain(gs, trained, seen)
	if n > 0 {
		slices.Sort(sessions)
		log.Warn("groups the run already trained are trained again in this session, from other files with the same group ids (a file re-scored, or the file a scored one was made from); to train only new groups, name only files of new groups",
			"session", sess.Index, "groups", n, "first", ids, "files", files, "trained_in_sessions", sessions)
	}
	return nil
}

// groupsAgain counts the groups of gs, of files other than those seen,
// whose id digests trained holds, and returns the first few of their ids,
// the files they are in (named without an object's bucket query) and
// where trained says each was trained, each listed once.
func groupsAgain[T comparable](gs []group, trained map[uint64]T, seen map[string]bool) (n int, ids, files []string, where []T) {
	const shown = 5
	for _, g := range gs {
		w, ok := trained[groupKey(g.ID)]
		if !ok || seen[g.File] {
			continue
		}
		n++
		if len(ids) < shown {
			ids = append(ids, g.ID)
		}
		if name := fileset.DisplayName(g.File); !slices.Contains(files, name) {
			files = append(files, name)
		}
		if !slices.Contains(where, w) {
			where = append(where, w)
		}
	}
	return n, ids, files, where
}

// groupKey is the digest of a group id that Session.Groups keeps: the
// first 8 bytes of its SHA-256 (two ids of 100,000 groups share one by a
// chance of about one in 10^9 per pair of sessions).
func groupKey(id string) uint64 {
	sum := sha256.Sum256([]byte(id))
	return binary.BigEndian.Uint64(sum[:8])
}

// groupDigest is the Session.Groups of gs.
func groupDigest(gs []group) string {
	keys := make([]uint64, 0, len(gs))
	for _, g := range gs {
		keys = append(keys, groupKey(g.ID))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	b := make([]byte, 8*len(keys))
	for i, k := range keys {
		binary.BigEndian.PutUint64(b[8*i:], k)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// digestKeys reads a Session.Groups back.
func digestKeys(s string) ([]uint64, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes, not a whole number of 8-byte digests", len(b))
	}
	keys := make([]uint64, len(b)/8)
	for i := range keys {
		keys[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return keys, nil
}

// lastSession is the session of the run's latest step: nil for a fresh
// run. A step saved before sessions were recorded belongs to session 0,
// started at step 0, whose files are known only by the names saved in its
// config: the same names, compared masked (redactNames), continue it.
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
	if slices.Equal(redactNames(saved.Inputs), redactNames(o.Inputs.Names())) {
		s.Files = files // same names: taken to be session 0's files
	}
	return s, nil
}

// redactNames is names as fileset.RedactURL gives each: the names a
// config records and the command's are compared so, an endpoint's
// password masked on both sides, as a resume compares --out. A config
// saved before sessions holds the names as written, a newer one masked
// ones, and a rotated password is the same store.
func redactNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fileset.RedactURL(n)
	}
	return out
}

// maskOldManifest rewrites the run's manifest.json masked where code
// before names were masked wrote it (Run.MaskManifest): a resume whose
// session is already complete records none, and only a call that wrote
// the manifest for its own reasons rewrote it, so the endpoint's password
// stayed, as it did for a --watch-dir call with nothing new.
func maskOldManifest(run *checkpoint.Run) error {
	man, err := run.ReadManifest()
	if err != nil {
		return err
	}
	return run.MaskManifest(man)
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
