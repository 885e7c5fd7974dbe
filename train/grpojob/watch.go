package grpojob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
)

// runWatch trains on the files of o.WatchDir not yet consumed.
func runWatch(ctx context.Context, base *trainer.Base, o Options, log *slog.Logger) error {
	// The folder may be named another way on a later call (a trailing
	// slash, relative by hand and absolute from cron, or moved): its files
	// are known by sha256 in the manifest, so nothing is trained twice.
	// Which rows a call trains is known only from the manifest, read under
	// the lock Setup takes: --chat-template-kwargs is compared once they
	// are read (trainer.DeferKwargs), so that a call whose rows all record
	// their own may add or drop it, as a resume on named files may.
	flag := o.TemplateKwargs
	o.MayChange = append(o.MayChange, "watch_dir")
	trainer.DeferKwargs(&o.Options)
	prep, err := trainer.Setup(ctx, base, &o.Options, o, trainer.ResumeQuiet, log)
	if err != nil {
		return err
	}
	defer prep.Close()
	runKwargs := o.TemplateKwargs // the run's, on a resume (Setup)
	o.TemplateKwargs = flag       // rows without a record are laid out under the command's
	run := prep.Ckpt
	man, err := run.ReadManifest()
	if err != nil {
		return err
	}
	// A call with nothing new writes no manifest of its own: one written
	// before names were masked kept the endpoint's password until then.
	if err := run.MaskManifest(man); err != nil {
		return err
	}
	warnUndone(man, prep.Done, run, log)
	// Each file is read once: the bytes hashed are the bytes trained
	// (held[i] is sess.Files[i]'s), so that a file replaced meanwhile is
	// never trained as its new contents under the old contents' hash.
	var held [][]byte
	sess := man.Pending
	if sess != nil {
		if held, err = finishPending(ctx, o.WatchDir, prep, &man, log); err != nil {
			return err
		}
	} else {
		sess = &checkpoint.Session{StartStep: prep.Done}
		var restatted bool
		if sess.Files, held, restatted, err = listNew(ctx, o.WatchDir, &man, log); err != nil {
			return err
		}
		if restatted {
			if err := run.WriteManifest(man); err != nil {
				return err
			}
		}
		if len(sess.Files) == 0 {
			// No row read: the flag stays compared, as before a session.
			if err := trainer.CheckDeferredKwargs(prep, &o.Options, runKwargs, nil); err != nil {
				return err
			}
			log.Info("nothing new", "watch_dir", fileset.DisplayName(o.WatchDir), "files_consumed", len(man.Consumed), "run", run.Dir, "step", prep.Done)
			return nil
		}
		sess.EndStep = -1
	}
	var files []string
	for _, f := range sess.Files {
		files = append(files, f.Path)
	}
	// A bad new file is refused here, before the session is written to the
	// manifest: fixed (and so changed), it is then read as a new file. This
	// is the one decoding of the files; the session's length below comes
	// from the groups it returns.
	rk := &trainer.RowKwargs{Flag: o.TemplateKwargs}
	gs, err := loadInputs(ctx, base, o, fileset.Held(files, held), rk)
	if err == nil || errors.Is(err, trainer.ErrAllHeldOut) {
		if err := trainer.CheckDeferredKwargs(prep, &o.Options, runKwargs, rk); err != nil {
			return err
		}
	}
	if errors.Is(err, trainer.ErrAllHeldOut) && sess.EndStep < 0 {
		// Eval episodes written into the watched folder: not bad files,
		// and refusing them would fail every call until a file of train
		// rows landed. They are consumed untrained, so no call reads them
		// again.
		log.Warn("nothing to train: the new files hold only trajectories of split val or test (held-out data); they are recorded as consumed",
			"files", trainer.InputList(files), "run", run.Dir, "step", prep.Done) // objects without their bucket query
		for _, f := range sess.Files {
			f.Step = prep.Done
			man.Consumed = append(man.Consumed, f)
		}
		return run.WriteManifest(man)
	}
	if err != nil {
		return err
	}
	if sess.EndStep < 0 {
		// Fix the session's length before training, so a resumed session
		// aims at the same step.
		per := o.GroupsPerStep
		if per == 0 || per > len(gs) {
			per = len(gs)
		}
		n := trainer.Order{N: len(gs), PerStep: per, CrossEpochs: o.StepsCrossEpochs}.StepsFor(o.Epochs)
		if o.Steps > 0 { // in watch mode --steps counts the steps of one session
			n = o.Steps
		}
		sess.EndStep = sess.StartStep + n
		man.Pending = sess
		if err := run.WriteManifest(man); err != nil {
			return err
		}
		log.Info("training on new files", "files", len(files), "first_step", sess.StartStep+1, "last_step", sess.EndStep)
		if err := warnConsumedGroupsAgain(run, man, prep.Done, gs, log); err != nil {
			return err
		}
	}
	extra, _ := json.Marshal(sess.Redacted()) // as the manifest keeps it
	if err := train(ctx, prep, o, gs, sess.StartStep, sess.EndStep, o.Seed+uint64(sess.StartStep), extra, log); err != nil {
		return err
	}
	return consume(run, man, sess, gs)
}

// consume moves the files of the finished session sess from man's pending
// session to its consumed ones, each with the step the session ended at
// and the digest of the groups gs trained from it (FileEntry.Groups), and
// writes man.
func consume(run *checkpoint.Run, man checkpoint.Manifest, sess *checkpoint.Session, gs []group) error {
	for _, f := range sess.Files {
		f.Step = sess.EndStep
		var of []group
		for _, g := range gs {
			if g.File == f.Path {
				of = append(of, g)
			}
		}
		f.Groups = groupDigest(of)
		man.Consumed = append(man.Consumed, f)
	}
	man.Pending = nil
	return run.WriteManifest(man)
}

// warnConsumedGroupsAgain warns, once, when groups of a new watch
// session's files (gs) have ids that a consumed file trained (by step
// done, which the run still has): the same groups in other bytes, as a
// file re-scored, or the proxy's file and a hone-score output made from
// it both landed in the folder, have. A named-file session is warned of
// this (warnGroupsAgain); a watch call trained them again without a word.
// Retraining may be meant, so it is never refused. A file consumed
// without its groups recorded is not checked.
func warnConsumedGroupsAgain(run *checkpoint.Run, man checkpoint.Manifest, done int, gs []group, log *slog.Logger) error {
	trained := map[uint64]string{} // group id digest: the consumed file that trained it
	for _, f := range man.Consumed {
		if f.Step > done || f.Groups == "" {
			continue
		}
		keys, err := digestKeys(f.Groups)
		if err != nil {
			return fmt.Errorf("grpo: %s: consumed %s: groups: %w", filepath.Join(run.Dir, checkpoint.ManifestName), fileset.DisplayName(f.Path), err)
		}
		for _, k := range keys {
			trained[k] = fmt.Sprintf("%s (consumed at step %d)", fileset.DisplayName(f.Path), f.Step)
		}
	}
	if n, ids, files, from := groupsAgain(gs, trained, nil); n > 0 {
		log.Warn("groups the run already trained are trained again in this session, from new files with the same group ids as consumed ones (a file re-scored, or the file a scored one was made from); to train only new groups, keep one file of each group in the folder",
			"groups", n, "first", ids, "files", files, "trained_from", from)
	}
	return nil
}

// finishPending readies the unfinished session of man (man.Pending) of
// the run prep resumed: it reads the session's files (readPending),
// returning their bytes, and begins it again at the step the run
// continues from where latest was moved back before it began.
func finishPending(ctx context.Context, watchDir string, prep *trainer.Prepared, man *checkpoint.Manifest, log *slog.Logger) ([][]byte, error) {
	run, sess := prep.Ckpt, man.Pending
	if len(sess.Files) == 0 {
		// Only a hand edit leaves a pending session without files (one
		// is written once its files are listed): read as given, it failed
		// with the reader's "no input files", naming no file.
		return nil, stageerr.BadInputf("%s: the pending session (begun at step %d, to end at step %d) lists no files, so it has nothing to finish: "+
			"remove its \"pending\" entry to start a new session on the folder's new files",
			filepath.Join(run.Dir, checkpoint.ManifestName), sess.StartStep, sess.EndStep)
	}
	held, err := readPending(ctx, watchDir, sess, log)
	if err != nil {
		return nil, err
	}
	if sess.StartStep > prep.Done {
		// latest was moved back by hand before the session began: the
		// steps it trained are redone, so it begins again from there.
		log.Warn("the unfinished session began after the step the run continues from: it begins again there",
			"run", run.Dir, "began_at_step", sess.StartStep, "from_step", prep.Done)
		sess.StartStep, sess.EndStep = prep.Done, prep.Done+sess.EndStep-sess.StartStep
		if err := run.WriteManifest(*man); err != nil {
			return nil, err
		}
	}
	log.Info("finishing the session", "files", len(sess.Files), "begun_at_step", sess.StartStep)
	return held, nil
}

// listNew lists watchDir and returns its files not consumed yet (in man),
// each with the bytes its entry was hashed from. A file whose stat equals
// a consumed entry's (FileEntry.SameStat: path, size, modification time,
// ETag, and not racy) is that entry, and is not read: a call reads what
// landed since the last, not the folder's whole history. Every other file
// is read whole and hashed; one whose hash was consumed, or taken before
// in this listing, is passed over (a copy is the same data), and a
// consumed entry of its path takes its new stat (restatted: the caller
// writes the manifest), so that the next call need not read it. A file
// its writer has not finished (unfinishedParquet), or a symbolic link
// whose target does not exist, is left for a later call, with a warning
// naming it, and one deleted since the listing is passed over. The listing, stats and reads share one
// bucket per bucket URL.
func listNew(ctx context.Context, watchDir string, man *checkpoint.Manifest, log *slog.Logger) (files []checkpoint.FileEntry, held [][]byte, restatted bool, err error) {
	// The folder is read by the directory rule of every input (fileset):
	// its *.parquet files, not below it, no hidden or temporary names.
	set, err := fileset.ListSet(ctx, watchDir, ".parquet")
	if err != nil {
		return nil, nil, false, stageerr.Input(fmt.Errorf("--watch-dir: %w", err))
	}
	defer set.Close()
	// The directory rule is case-sensitive, for every reader of inputs;
	// a file named *.PARQUET (a writer's own naming) is named once per
	// call, not trained, rather than passed over without a word.
	for _, n := range set.OtherCase() {
		log.Warn("a file whose extension is .parquet only in another case is not read (the folder's files are read by the exact, lower-case extension): rename it to end in .parquet to have it trained",
			"file", fileset.DisplayName(n))
	}
	// A symbolic link is read as the file it names (the listing follows
	// it); one whose target is not there (yet) is named and left for a
	// later call, as a file still being written is, rather than failing
	// the call and holding back the other files.
	dangling, err := fileset.DanglingLinks(ctx, watchDir, ".parquet")
	if err != nil {
		return nil, nil, false, stageerr.Input(fmt.Errorf("--watch-dir: %w", err))
	}
	if len(dangling) > 0 {
		log.Warn("symbolic links that name no file (a target that does not exist, or a loop of links): left for a later call", "links", dangling)
	}
	// Keyed by the name as the manifest keeps it, its secrets masked
	// (checkpoint.Manifest): the listing's names carry the command's.
	byPath := map[string][]checkpoint.FileEntry{}
	for _, e := range man.Consumed {
		k := fileset.StoredName(e.Path)
		byPath[k] = append(byPath[k], e)
	}
	for i := range set.Len() {
		name := set.Name(i)
		st := checkpoint.StatInput(ctx, set, i)
		if st.Err == nil && slices.ContainsFunc(byPath[fileset.StoredName(name)], func(e checkpoint.FileEntry) bool { return e.SameStat(name, st.FileInfo) }) {
			continue
		}
		fe, b, err := checkpoint.ReadSetInput(ctx, set, i, st)
		if errors.Is(err, fs.ErrNotExist) {
			// Deleted since the listing (a cleanup job, a writer moving
			// it on): nothing to train, and no reason to fail the call
			// and hold back the other files.
			log.Info("a listed file was gone before it was read: passed over", "file", fileset.DisplayName(name))
			continue
		}
		if err != nil {
			return nil, nil, false, err
		}
		if unfinishedParquet(b) {
			// Written in place rather than renamed when whole: refused, it
			// failed every call (and held back the other files) until
			// its writer was done. Unwritten for long, it has no writer
			// (killed, or a copy cut short) and would be passed over
			// for good, with a warning no exit code shows.
			// An object store shows an object only once its upload is
			// whole, so there a footer-less object has no writer at all.
			if fileset.IsURL(name) {
				return nil, nil, false, stageerr.BadInputf("--watch-dir: %s: a Parquet object without its footer (a store shows an object only once it is whole, so it was uploaded cut short); upload it again, or remove it", fileset.DisplayName(name))
			}
			if st.Err == nil && !st.ModTime.IsZero() && st.At.Sub(st.ModTime) > unfinishedAfter {
				return nil, nil, false, stageerr.BadInputf("--watch-dir: %s: a Parquet file without its footer, not written to since %s: "+
					"its writer died or a copy was cut short; write it again, or move it out of the folder",
					name, st.ModTime.Format(time.RFC3339))
			}
			log.Warn("not a whole Parquet file yet (its writer has not written the footer): left for a later call",
				"file", name, "bytes", len(b))
			continue
		}
		if man.Has(fe.SHA256) {
			restatted = man.Restat(fe) || restatted
			continue
		}
		if !slices.ContainsFunc(files, func(e checkpoint.FileEntry) bool { return e.SHA256 == fe.SHA256 }) {
			files = append(files, fe)
			held = append(held, b)
		}
	}
	return files, held, restatted, nil
}

// unfinishedAfter is how long a Parquet file without its footer may go
// unwritten and still be taken for one being written: longer than a
// writer pauses between row groups, shorter than a file cut short should
// go unnoticed.
const unfinishedAfter = time.Hour

// unfinishedParquet says whether b is what a Parquet writer leaves before
// it is done: nothing yet, or Parquet's magic at the start without the
// footer and the closing magic, which every writer writes last. Other
// bytes that are not Parquet are refused when read, as any bad input.
func unfinishedParquet(b []byte) bool {
	magic := []byte(trajectory.Magic)
	if len(b) < len(magic) {
		return bytes.HasPrefix(magic, b)
	}
	// 12 bytes: the two magics and the footer's length, the least a
	// Parquet file holds.
	return bytes.HasPrefix(b, magic) && (len(b) < 12 || !bytes.HasSuffix(b, magic))
}

// readPending reads the files of the unfinished session sess, returning
// each one's bytes: the file at the path the session recorded or, where
// that no longer holds the same contents (the folder was moved, or named
// relative where it was absolute, as a later call may name it), the file
// of watchDir with the recorded sha256, whose path then replaces the
// recorded one; a name kept masked (fileset.IsRedacted) is looked for
// only there. A file found in neither place is an error naming it.
func readPending(ctx context.Context, watchDir string, sess *checkpoint.Session, log *slog.Logger) ([][]byte, error) {
	held := make([][]byte, len(sess.Files))
	found := make([]bool, len(sess.Files))
	// Why a recorded path could not be read (a permission, a folder in its
	// place): the error for a file found nowhere names it, rather than only
	// the sha256 the path no longer gave.
	readErr := make([]error, len(sess.Files))
	var missing []int
	for i, f := range sess.Files {
		if fileset.IsRedacted(f.Path) {
			// Kept with its store's password masked, the name opens
			// nothing: the file is found in watchDir by its sha256.
			missing = append(missing, i)
			continue
		}
		now, b, err := checkpoint.ReadInput(ctx, f.Path)
		if err == nil && now.SHA256 == f.SHA256 {
			held[i], found[i] = b, true
		} else {
			missing, readErr[i] = append(missing, i), err
		}
	}
	if len(missing) == 0 {
		return held, nil
	}
	if err := findPending(ctx, watchDir, sess, missing, held, found, log); err != nil {
		return nil, err
	}
	for _, i := range missing {
		if f := sess.Files[i]; !found[i] {
			// Named as the user names them: an object's query
			// (endpoint=…) says nothing of which file is missing.
			if fileset.IsRedacted(f.Path) {
				// Never opened (readPending): saying "that path" was tried
				// sent the user looking in the wrong place.
				return nil, fmt.Errorf("unfinished session from step %d needs %s unchanged (sha256 %s), which %s does not hold; manifest.json keeps its name with the store's secret masked, which opens nothing, so it was looked for in that folder by sha256 only",
					sess.StartStep, fileset.DisplayName(f.Path), f.SHA256, fileset.DisplayName(watchDir))
			}
			if readErr[i] != nil {
				return nil, fmt.Errorf("unfinished session from step %d needs %s unchanged (sha256 %s), which %s does not hold; reading it at that path: %w",
					sess.StartStep, fileset.DisplayName(f.Path), f.SHA256, fileset.DisplayName(watchDir), readErr[i])
			}
			return nil, fmt.Errorf("unfinished session from step %d needs %s unchanged (sha256 %s), which neither that path nor %s holds",
				sess.StartStep, fileset.DisplayName(f.Path), f.SHA256, fileset.DisplayName(watchDir))
		}
	}
	return held, nil
}

// findPending looks in watchDir for the files sess.Files[i] of missing,
// by sha256, filling held[i] and found[i] and taking the path each was
// found at. Only a file whose stat gives the size some file not yet
// found records (or whose size is not known) is read and hashed: the
// search reads what could be the session's, not the folder's whole
// history. A file that cannot be read is passed over with a warning
// naming it: it may be any file landed in the folder since, and failing
// the call on it held the session back until it was removed; if it was
// the session's own, the caller's error for the file not found follows
// the warning.
func findPending(ctx context.Context, watchDir string, sess *checkpoint.Session, missing []int, held [][]byte, found []bool, log *slog.Logger) error {
	set, err := fileset.ListSet(ctx, watchDir, ".parquet")
	if err != nil {
		return stageerr.Input(fmt.Errorf("--watch-dir: %w", err))
	}
	defer set.Close()
	// wanted reports whether a file of size n (-1: not known) could be a
	// session file not found yet; a recorded size of 0 is a hand-edited
	// entry without one, which any file may match.
	wanted := func(n int64) bool {
		return slices.ContainsFunc(missing, func(i int) bool {
			f := sess.Files[i]
			return !found[i] && (n < 0 || f.Size <= 0 || f.Size == n)
		})
	}
	for i := range set.Len() {
		if !wanted(-1) {
			break // every file found
		}
		n := set.Name(i)
		st := checkpoint.StatInput(ctx, set, i)
		if st.Err == nil && !wanted(st.Size) {
			continue
		}
		fe, b, err := checkpoint.ReadSetInput(ctx, set, i, st)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			log.Warn("a file of the watched folder could not be read while looking for the unfinished session's files: passed over",
				"file", fileset.DisplayName(n), "err", err)
			continue
		}
		for _, j := range missing {
			f := sess.Files[j]
			if found[j] || f.SHA256 != fe.SHA256 {
				continue
			}
			held[j], found[j] = b, true
			if fileset.StoredName(n) == fileset.StoredName(f.Path) {
				// The recorded path, kept masked: its stat is n's.
				sess.Files[j].Path = n
				continue
			}
			// The stat recorded was of the other path: the entry keeps
			// none, and the next call reads n and records its.
			sess.Files[j] = checkpoint.FileEntry{Path: n, SHA256: f.SHA256, Size: f.Size, Step: f.Step}
		}
	}
	return nil
}

// warnUndone warns, naming them, about the consumed files whose session
// ended after step done, the step the run continues from: latest was
// moved back past (part of) their training. They stay consumed, so no
// later call trains them again unless their entries are removed from
// manifest.json; without the warning, a rollback dropped their data
// without a word. It names an object without its bucket query, as
// manifest.json does not.
func warnUndone(man checkpoint.Manifest, done int, run *checkpoint.Run, log *slog.Logger) {
	var undone []string
	for _, f := range man.Consumed {
		if f.Step > done {
			undone = append(undone, fmt.Sprintf("%s (sha256 %s, consumed at step %d)", fileset.DisplayName(f.Path), f.SHA256, f.Step))
		}
	}
	if len(undone) > 0 {
		log.Warn("the run continues from a step before some consumed files were trained to their end; they stay consumed and are not trained again: to train them again, remove their entries from the consumed list of "+
			filepath.Join(run.Dir, checkpoint.ManifestName), "run", run.Dir, "from_step", done, "files", undone)
	}
}
