package runfolder

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/fileset"
)

// A run folder is mirrored to object storage (s3://bucket/adapters/RUN)
// by Publish on the training side and copied back by Pull on the serving
// side. The remote folder has the same names; its latest is written last
// and only after every file of the step it names is uploaded, so a step
// up to the remote latest is complete. Pull copies a step into a temporary
// folder and renames it into place, then moves the local latest: a local
// reader (serve's watcher) never sees half a step. A Pull cut off keeps
// the steps it renamed into place, recorded (pulledName), and the next
// one, starting from the same local latest, does not download them again.
//
// Each remote step folder also holds its file list (stepListName), written
// after the step's files and deleted after them when a publisher prunes
// the step, and read by Pull before it lists the step: a step listed while
// a prune deletes it lacks a file its list names, and is left out, never
// copied in part. A step published before the lists were written (none) is
// copied as listed.

// remoteLatest reads the latest pointer of a remote (or local) run folder
// through fileset; ok is false when there is none. A bucket that does not
// exist is an error (matching fileset.ErrNoBucket, naming the bucket), not
// "none": its error matches fs.ErrNotExist too, and read so a mistyped
// bucket, which never comes to exist, was a run not published yet, which
// Pull copied nothing from and its followers waited on in silence.
func remoteLatest(ctx context.Context, run string) (Step, bool, error) {
	name := fileset.Join(run, LatestName)
	b, err := fileset.ReadFile(ctx, name)
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fileset.ErrNoBucket) {
		return Step{}, false, nil
	}
	if err != nil {
		return Step{}, false, err
	}
	s := Step{Name: strings.TrimSpace(string(b))}
	n, ok := ParseStepName(s.Name)
	if !ok {
		return Step{}, false, fmt.Errorf("%s names %q, not a step-N folder of the run", fileset.DisplayName(name), s.Name)
	}
	s.N = n
	return s, true, nil
}

// Publish uploads the steps of the local run folder localRun that are
// newer than the remote run folder's latest and no newer than the local
// latest, oldest first, moving the remote latest on to each step but the
// newest once that step is whole in the store, then the run's other files
// (metrics.jsonl, manifest.json…; not its lock or temporary files), then
// points the remote latest at the local one when that is newer. A call
// cut off part way so keeps the steps it got up: the next starts after
// them. It returns the steps uploaded. A local run
// without latest publishes nothing. The run's files go up as they were
// while the local latest was the step the store's latest comes to name,
// never newer (older where a call was cut off after moving the remote
// latest past the store's files: a fresh trainer pulling that may train
// again the inputs trained since those files were read, never skip one
// not trained): where the trainer saved a step while Publish ran, that step
// is uploaded too and the files are read again (a few times at most; then
// the last read goes up with the latest read after it).
//
// Once the store's latest names the local latest, Publish deletes from the
// store the step folders older than it that the local folder no longer
// holds: hone-train's --keep-last prunes the local folder, and the store
// keeps what it keeps, so that it does not grow by a step each call and a
// fresh trainer's Pull copies only the kept steps. It deletes nothing
// while the store's latest is elsewhere (an upload failed, another
// trainer moved it on), nothing newer than the local latest, and never
// the step latest names, so a reader that follows latest always finds its
// step whole. Neither side moves a latest back, so
// rolling a served run back (writing an older step's name into latest)
// is not carried through object storage: the next Pull moves the copy's
// latest forward to the store's again.
func Publish(ctx context.Context, localRun, remoteRun string) ([]int, error) {
	last, ok, err := ReadPointer(localRun, LatestName)
	if err != nil || !ok {
		return nil, err
	}
	from := -1
	if r, ok, err := remoteLatest(ctx, remoteRun); err != nil {
		return nil, fmt.Errorf("publish %s: %w", localRun, err)
	} else if ok {
		from = r.N
	}
	done, err := publishSteps(ctx, localRun, remoteRun, from, last.N)
	if err != nil {
		return done, err
	}
	files, last, err := readRunFiles(ctx, localRun, remoteRun, last, &done)
	if err != nil {
		return done, err
	}
	// The files go up only with the latest they were read at: ahead of
	// the store's latest, a manifest.json would name as trained the files
	// of steps the store does not have (a trainer killed before its next
	// publish left them so, and the next pod never trained them).
	if last.N > from && !slices.Contains(done, last.N) {
		return done, nil
	}
	if err := writeFiles(ctx, files, remoteRun); err != nil {
		return done, fmt.Errorf("publish %s: %w", localRun, err)
	}
	// Only forward: a store another trainer moved on is not rolled back;
	// and only to a step uploaded here, not one pruned meanwhile (a newer
	// step is latest by now, for the next call).
	remoteAt := from
	if last.N > from {
		if err := fileset.WriteFile(ctx, fileset.Join(remoteRun, LatestName), []byte(last.Name+"\n")); err != nil {
			return done, fmt.Errorf("publish %s: %w", localRun, err)
		}
		remoteAt = last.N
	}
	// Pruned only once the store's latest is the local one: each earlier
	// step the store holds then is one the local folder had and dropped
	// (or a leftover of a call that stopped before it could delete it).
	if remoteAt == last.N {
		if err := prunePublished(ctx, localRun, remoteRun, last.N); err != nil {
			return done, fmt.Errorf("publish %s: %w", localRun, err)
		}
		if err := dropUnnamedBest(ctx, localRun, remoteRun); err != nil {
			return done, fmt.Errorf("publish %s: %w", localRun, err)
		}
	}
	return done, nil
}

// CheckWritable writes a small object in the remote run folder remoteRun
// and deletes it, and says why it could not. Publish writes (steps,
// latest) and deletes (the steps --keep-last pruned): credentials that
// may only read, or a bucket policy that refuses this writer, were
// noticed only when a publish failed, which a trainer retries and warns
// about until the last one, at the end of a run that trained for hours.
// The object's name is a temporary one (IsTemp), which listings and Pull
// pass over, should its delete be cut off.
func CheckWritable(ctx context.Context, remoteRun string) error {
	name := fileset.Join(remoteRun, fmt.Sprintf(".write-check%s%d-%d", tempMark, os.Getpid(), time.Now().UnixNano()))
	if err := fileset.WriteFile(ctx, name, []byte("hone: a check that this run folder can be published to; delete it\n")); err != nil {
		return fmt.Errorf("%s cannot be published to: %w", fileset.DisplayName(remoteRun), err)
	}
	if err := fileset.Remove(ctx, name); err != nil {
		return fmt.Errorf("%s cannot be published to (its pruned steps are deleted): %w", fileset.DisplayName(remoteRun), err)
	}
	return nil
}

// publishSteps uploads the steps of localRun in (from, to], each read
// whole first, and returns those uploaded.
func publishSteps(ctx context.Context, localRun, remoteRun string, from, to int) ([]int, error) {
	steps, err := Steps(localRun)
	if err != nil {
		return nil, err
	}
	var done []int
	for _, s := range steps {
		if s.N <= from || s.N > to {
			continue
		}
		// The whole step is read before any of it is uploaded: training
		// goes on meanwhile, and --keep-last may prune the folder. A step
		// pruned before it was read is not published (as one pruned before
		// this call), never published in part.
		dir := filepath.Join(localRun, s.Name)
		files, _, err := readFiles(ctx, dir, nil)
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
				continue
			}
		}
		if err == nil {
			err = writeFiles(ctx, files, fileset.Join(remoteRun, s.Name))
		}
		if err == nil {
			err = writeStepList(ctx, fileset.Join(remoteRun, s.Name), files)
		}
		if err != nil {
			return done, fmt.Errorf("publish step %d of %s: %w", s.N, localRun, err)
		}
		done = append(done, s.N)
		// The store's latest follows each step but the last as it is up:
		// a publish cut off (a deadline on a store that stopped answering)
		// leaves the steps it got up named, and the next starts after
		// them; before, each started from nothing, and a backlog longer
		// than the deadline was never published. The last step's latest
		// goes up after the run's files, as Publish says.
		if s.N < to {
			if err := fileset.WriteFile(ctx, fileset.Join(remoteRun, LatestName), []byte(s.Name+"\n")); err != nil {
				return done, fmt.Errorf("publish step %d of %s: move the store's latest: %w", s.N, localRun, err)
			}
		}
	}
	return done, nil
}

// runFileReads is how many times readRunFiles reads the run's files while
// the trainer moves latest on, before it takes the last read as it is.
const runFileReads = 3

// readRunFiles reads the run's files other than latest and lock, and the
// local latest they go up with: the trainer writes them as it moves
// latest (manifest.json right after), so they are read again, after
// publishing the steps saved meanwhile (added to done), until latest
// stays where it was across the read. Where it kept moving, the last read
// goes up with the latest read after it: files read before latest named
// a step are no newer than that step (the trainer writes them after it
// moves latest), and giving up instead left the store's latest where it
// was for as long as the trainer outpaced the upload.
func readRunFiles(ctx context.Context, localRun, remoteRun string, last Step, done *[]int) ([]namedFile, Step, error) {
	for i := 1; ; i++ {
		files, _, err := readFiles(ctx, localRun, func(name string) bool { return name == LatestName || name == "lock" })
		if err != nil {
			return nil, last, fmt.Errorf("publish %s: %w", localRun, err)
		}
		now, has, err := ReadPointer(localRun, LatestName)
		if err != nil {
			return nil, last, err
		}
		if !has || now.N == last.N {
			return files, last, nil
		}
		more, err := publishSteps(ctx, localRun, remoteRun, last.N, now.N)
		*done = append(*done, more...)
		if err != nil {
			return nil, last, err
		}
		last = now
		if i == runFileReads {
			return files, last, nil
		}
	}
}

// dropUnnamedBest deletes the store's best when the local run has none:
// hone-train removes it when a resume drops --best-metric or changes it
// (until a step has a value) and when it trains the step best named again,
// and the store's copy, left, named a step by a metric the run no longer
// keeps, which prunePublished then deletes: the store's best named no step,
// and a fresh trainer's Pull copied it back.
func dropUnnamedBest(ctx context.Context, localRun, remoteRun string) error {
	if _, err := os.Stat(filepath.Join(localRun, BestName)); !errors.Is(err, fs.ErrNotExist) {
		return err // nil: the local best was uploaded with the run's files
	}
	if err := fileset.Remove(ctx, fileset.Join(remoteRun, BestName)); err != nil {
		return fmt.Errorf("delete the best pointer, which %s no longer has: %w", localRun, err)
	}
	return nil
}

// prunePublished deletes from the remote run folder the step folders
// older than latest that the local run folder does not hold.
func prunePublished(ctx context.Context, localRun, remoteRun string, latest int) error {
	kept, err := Steps(localRun)
	if err != nil {
		return err
	}
	dirs, err := fileset.ListDirs(ctx, remoteRun)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		name := baseName(d)
		n, ok := ParseStepName(name)
		if !ok || n >= latest || slices.ContainsFunc(kept, func(s Step) bool { return s.N == n }) {
			continue
		}
		if err := removeStep(ctx, fileset.Join(remoteRun, name)); err != nil {
			return fmt.Errorf("delete step %d, which %s no longer keeps: %w", n, localRun, err)
		}
	}
	return nil
}

// stepListName is the object in a remote step folder that lists the
// step's files. It starts with "." so that listings (fileset.List) pass
// over it: it is never copied into a local folder, nor published from one.
const stepListName = ".step-files.json"

// stepList is the contents of stepListName.
type stepList struct {
	Files []string `json:"files"`
}

// ErrIncompleteStep matches Pull's error, and the reason given to
// PullOptions.LeftOut, for a step whose folder lacks a file its list
// names: a step being pruned, or one broken by hand.
var ErrIncompleteStep = errors.New("the step is not whole")

// writeStepList writes the file list of the remote step folder dir, once
// files are all in it: a reader that finds the list finds every file it
// names, until a prune deletes them (removeStep).
func writeStepList(ctx context.Context, dir string, files []namedFile) error {
	var l stepList
	for _, f := range files {
		l.Files = append(l.Files, f.name)
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return fileset.WriteFile(ctx, fileset.Join(dir, stepListName), append(b, '\n'))
}

// readStepList reads the file list of the remote step folder dir; ok is
// false where it has none (a step published before the lists were, or a
// prune that has deleted every file and the list).
func readStepList(ctx context.Context, dir string) (names []string, ok bool, err error) {
	name := fileset.Join(dir, stepListName)
	b, err := fileset.ReadFile(ctx, name)
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fileset.ErrNoBucket) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var l stepList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, false, fmt.Errorf("%s: %w", fileset.DisplayName(name), err)
	}
	return l.Files, true, nil
}

// removeStep deletes the remote step folder dir: its files first, then its
// list (and whatever else is left), so that a Pull listing the folder
// meanwhile finds a file of the list missing. fileset.RemoveAll alone
// deleted in key order, the list (".…") first.
func removeStep(ctx context.Context, dir string) error {
	names, err := fileset.List(ctx, dir, "")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, n := range names {
		if err := fileset.Remove(ctx, n); err != nil {
			return err
		}
	}
	return fileset.RemoveAll(ctx, dir)
}

// PullOptions says what Pull copies.
type PullOptions struct {
	// Skip, if set, leaves out the step files it names (serving needs no
	// optimizer state).
	Skip func(name string) bool
	// Newest, if > 0, copies only the newest Newest steps that are new.
	Newest int
	// LeftOut, if set, is called with each step older than the store's
	// latest that Pull leaves out, and why: one pruned from the store
	// after the listing (matching fs.ErrNotExist), or one listed while it
	// was being pruned, which lacks files its list names (matching
	// ErrIncompleteStep, naming them).
	LeftOut func(step int, why error)
	// Mirror says localRun is a copy of the store's run and nothing else
	// (hone-serve's cache; not a trainer's folder, ahead of the store by
	// the steps it has not published): the store's run is the one to
	// hold. A run deleted from the store and trained again under its name
	// (its latest older than the copy's, the step the copy's latest names
	// listed with other files than were copied, or, that step pruned, the
	// store's metrics.jsonl holding another row of it than the copy's, or
	// the store holding none)
	// replaces the copy,
	// pulled whole beside it and swapped in (replaceRun), so a reader sees
	// the old copy or the new one, never a mix. Before, a copy ahead of
	// the store was left as it was, and hone-serve served the deleted
	// run's adapter for good without a word.
	Mirror bool
	// Replaced, if set, is told the copy's latest and the store's when a
	// Mirror pull replaces the copy.
	Replaced func(was, now int)
}

// Pull copies the steps of the remote run folder remoteRun that are newer
// than localRun's latest and no newer than the remote latest into
// localRun, each through a temporary folder renamed into place (newest
// first), then the run's other files, then moves the local latest. It
// returns the steps copied, in ascending order: by this call, or by an
// earlier one cut off since the local latest last moved, whose steps
// renamed into place are kept (pulledName) and not downloaded again. Its
// errors name remoteRun without its bucket query (fileset.DisplayName),
// which names no folder and put the store's address in hone-serve's and
// hone-train's messages. With PullOptions.Mirror, a copy of a run the
// store no longer holds (deleted and published anew under its name) is
// replaced whole instead, and the steps returned are the new copy's.
func Pull(ctx context.Context, remoteRun, localRun string, o PullOptions) ([]int, error) {
	last, ok, err := remoteLatest(ctx, remoteRun)
	if err != nil || !ok {
		return nil, err
	}
	from := -1
	if l, ok, err := ReadPointer(localRun, LatestName); err != nil {
		return nil, err
	} else if ok {
		from = l.N
	}
	if o.Mirror && from >= 0 {
		other, err := republished(ctx, remoteRun, localRun, last, from, o.Skip)
		if err != nil {
			return nil, fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
		}
		if other {
			return replaceRun(ctx, remoteRun, localRun, o, from, last.N)
		}
	}
	if last.N <= from {
		return nil, nil
	}
	dirs, err := fileset.ListDirs(ctx, remoteRun)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
	}
	var steps []Step
	for _, d := range dirs {
		name, _, _ := strings.Cut(d, "?")
		name = path.Base(filepath.ToSlash(name))
		if n, ok := ParseStepName(name); ok && n > from && n <= last.N {
			steps = append(steps, Step{N: n, Name: name})
		}
	}
	slices.SortFunc(steps, func(a, b Step) int { return cmp.Compare(a.N, b.N) })
	if len(steps) == 0 || steps[len(steps)-1].N != last.N {
		return nil, missingLatestStep(ctx, remoteRun, last)
	}
	if o.Newest > 0 && len(steps) > o.Newest {
		steps = steps[len(steps)-o.Newest:]
	}
	if err := os.MkdirAll(localRun, 0o755); err != nil {
		return nil, fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
	}
	rec, err := readPulled(localRun, from)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
	}
	var done []int
	var newest pulledStep // what the store's latest step's files were
	// Newest first: a reader of a copy that has no latest yet takes the
	// highest step folder for current, and that is the remote latest from
	// the first rename on, never an older step still being copied.
	for _, s := range slices.Backward(steps) {
		if rec.holds(ctx, fileset.Join(remoteRun, s.Name), localRun, s.Name, o.Skip) {
			if s.N == last.N {
				newest = *rec.find(s.Name)
			}
			done = append(done, s.N)
			continue
		}
		got, err := pullStep(ctx, fileset.Join(remoteRun, s.Name), filepath.Join(localRun, s.Name), o.Skip)
		if (errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrIncompleteStep)) && s.N != last.N {
			// An older step pruned from the store after the listing, or
			// being pruned when it was listed, is not copied (nor a part
			// of it); the one latest names is never pruned while it names
			// it, so there a missing file is an error.
			if o.LeftOut != nil {
				o.LeftOut(s.N, err)
			}
			continue
		}
		if err == nil {
			err = rec.add(localRun, got)
		}
		if s.N == last.N {
			newest = got
		}
		if err != nil {
			slices.Sort(done)
			return done, fmt.Errorf("pull step %d of %s: %w", s.N, fileset.DisplayName(remoteRun), err)
		}
		done = append(done, s.N)
	}
	slices.Sort(done)
	if err := copyFiles(ctx, remoteRun, localRun, func(name string) bool { return name == LatestName || name == "lock" }); err != nil {
		return done, fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
	}
	if err := WritePointer(localRun, LatestName, last.N); err != nil {
		return done, err
	}
	// The record is of steps newer than the old latest; the next Pull
	// starts after the new one. A mirror's keeps what the new latest's
	// files were, which tells the next whether the store's run is still
	// the one copied (republished).
	if o.Mirror {
		b, err := json.Marshal(pulledRecord{From: last.N, Latest: &newest})
		if err == nil {
			err = WriteFile(filepath.Join(localRun, pulledName), append(b, '\n'))
		}
		if err != nil {
			return done, fmt.Errorf("pull %s: record its latest step: %w", fileset.DisplayName(remoteRun), err)
		}
		return done, nil
	}
	if err := os.Remove(filepath.Join(localRun, pulledName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return done, fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
	}
	return done, nil
}

// republished reports whether the store's run remoteRun, whose latest is
// last, is no longer the one localRun, whose latest is step from, was
// copied from: Publish never moves a store's latest back, so a latest
// older than the copy's is a run deleted and published anew; and the
// step the copy's latest names, listed by the store with other files
// than the record of the pull that copied it (pulledRecord.Latest) says,
// is one published anew under its name. A step the store lists with only
// some of the files copied, each as copied (being pruned: removeStep
// deletes them one by one), or a copy without the record (pulled by an
// older hone), tells nothing, and is taken as the same run: a file
// published anew lists another time or tag than the one copied, so only a
// file the record does not name, or names otherwise, tells another run
// (TestPullMirrorStepBeingPrunedIsNoRepublish). A step the store no longer
// lists at all (pruned as its run moved on, or by a run deleted and
// trained past it) is judged by the metrics rows (otherMetrics).
func republished(ctx context.Context, remoteRun, localRun string, last Step, from int, skip func(string) bool) (bool, error) {
	if last.N < from {
		return true, nil
	}
	rec, err := readPulled(localRun, from)
	if err != nil || rec.Latest == nil {
		return false, err
	}
	// The step gone (pruned as the run moved on, or the run deleted and
	// trained past it) tells nothing: the metrics rows may.
	gone := func() (bool, error) {
		if last.N == from {
			return false, nil // a store whose latest step is gone: Pull copies nothing
		}
		return otherMetrics(ctx, remoteRun, localRun, from)
	}
	set, err := fileset.ListSet(ctx, fileset.Join(remoteRun, rec.Latest.Name), "")
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fileset.ErrNoBucket) {
		return gone()
	}
	if err != nil {
		return false, err
	}
	defer set.Close()
	listed := 0
	for i := range set.Len() {
		base := baseName(set.Name(i))
		if skip != nil && skip(base) {
			continue
		}
		j := slices.IndexFunc(rec.Latest.Files, func(f pulledFile) bool { return f.Name == base })
		if j < 0 {
			return true, nil
		}
		fi, err := set.Listed(ctx, i)
		if err != nil {
			return false, fmt.Errorf("list %s: %w", fileset.DisplayName(set.Name(i)), err)
		}
		if !rec.Latest.Files[j].sameAs(fi) {
			return true, nil
		}
		listed++
	}
	if listed == 0 {
		return gone()
	}
	return false, nil
}

// otherMetrics reports whether the store's run remoteRun, which no longer
// lists the step from that the copy localRun's latest names, is another
// run than the one copied (TestPullMirrorRepublishedPastPrunedLatest):
// the same run pruned it as it trained on (--keep-last), where a run
// deleted and trained again past it under the same name did too, and its
// steps were pulled on top of the old run's. Each metrics row hone-train
// writes is stamped with when its step ended, to the millisecond, and
// only a local rollback rewrites the row of a step the store has had: the
// copy's newest row of a step no later than from is in the store's
// metrics.jsonl, line for line, while the run is the same, and a row of
// that step otherwise says it is another, as does a store without the
// file the copy took from it. A copy without the file, or a store without
// a row of that step, tells nothing, and the run is taken as the same, as
// before.
func otherMetrics(ctx context.Context, remoteRun, localRun string, from int) (bool, error) {
	mine, err := os.ReadFile(filepath.Join(localRun, MetricsName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var row []byte
	step := -1
	for _, line := range bytes.Split(mine, []byte{'\n'}) {
		if n, ok := metricsStep(line); ok && n <= from && n >= step {
			row, step = line, n
		}
	}
	if row == nil {
		return false, nil
	}
	name := fileset.Join(remoteRun, MetricsName)
	theirs, err := fileset.ReadFile(ctx, name)
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fileset.ErrNoBucket) {
		// The copy's metrics.jsonl came from the store, and Publish never
		// deletes it: the run was deleted, and the new one's steps are up
		// before its files (Publish moves latest on to each step it
		// uploads but the newest first; TestPullMirrorRepublishedBeforeItsMetrics).
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", fileset.DisplayName(name), err)
	}
	other := false
	for _, line := range bytes.Split(theirs, []byte{'\n'}) {
		if bytes.Equal(line, row) {
			return false, nil
		}
		if n, ok := metricsStep(line); ok && n == step {
			other = true
		}
	}
	return other, nil
}

// metricsStep is the step of a metrics.jsonl line; ok is false for a
// line that is no row (a torn last line, an empty one).
func metricsStep(line []byte) (int, bool) {
	var r struct {
		Step *float64 `json:"step"`
	}
	if json.Unmarshal(line, &r) != nil || r.Step == nil {
		return 0, false
	}
	return int(*r.Step), true
}

// replaceRun pulls the store's run remoteRun whole into a temporary folder
// beside localRun (a name IsTemp, and no run name, so readers of the
// folder pass over it) and swaps it in for localRun, whose latest was
// step was; the old copy goes after the swap. A pull that fails leaves
// localRun as it was.
func replaceRun(ctx context.Context, remoteRun, localRun string, o PullOptions, was, now int) ([]int, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(localRun), "."+filepath.Base(localRun)+tempMark+"*")
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
	}
	defer os.RemoveAll(tmp) // the old copy, once swapped out
	done, err := Pull(ctx, remoteRun, tmp, o)
	if err != nil {
		return nil, err
	}
	if err := swapFolders(tmp, localRun); err != nil {
		return nil, fmt.Errorf("pull %s: replace the copy %s of the run published anew: %w", fileset.DisplayName(remoteRun), localRun, err)
	}
	if o.Replaced != nil {
		o.Replaced(was, now)
	}
	return done, nil
}

// pulledName is a file of a local run folder that records the steps Pull
// renamed into place since the local latest last moved, which moves only
// once the whole pull is done: a pull cut off (hone-serve's
// --poll-timeout, hone-train's --publish-timeout at start) kept its
// steps' folders, and the next pull, starting from the same latest,
// downloaded them all again, so a run whose new steps took longer than
// the deadline to download was never pulled. Only steps this record names
// are taken as whole: a step folder there otherwise (a trainer killed
// between saving a step and moving latest) may not be the store's step;
// and only while the store lists the step's files as they were copied: a
// store rolled back by hand and trained on again holds other files under
// the step's name. A Mirror pull keeps it once done, naming only what
// the new latest's files were (pulledRecord.Latest). It starts with "."
// so that Publish passes over it.
const pulledName = ".pulled.json"

// pulledRecord is the contents of pulledName.
type pulledRecord struct {
	// From is the local latest (-1: none) the steps were pulled over: a
	// record of another is stale (the latest moved since; a trainer may
	// have saved a step of the same name), and read as empty.
	From  int          `json:"from"`
	Steps []pulledStep `json:"steps"`
	// Latest is the step From names as a Mirror pull copied it: what
	// tells a run published anew under the same name (republished).
	Latest *pulledStep `json:"latest,omitempty"`
}

// find returns the recorded step name, nil if none.
func (r *pulledRecord) find(name string) *pulledStep {
	i := slices.IndexFunc(r.Steps, func(p pulledStep) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return &r.Steps[i]
}

// pulledStep is a step folder Pull renamed into place, and what of the
// store's step it holds.
type pulledStep struct {
	Name string `json:"name"`
	// Files were copied; Skipped were listed and left out by
	// PullOptions.Skip, so a pull that skips less (a trainer's, which
	// needs the optimizer state) does not take the folder as whole.
	Files   []pulledFile `json:"files"`
	Skipped []string     `json:"skipped,omitempty"`
}

// pulledFile is a file Pull copied, and what the store's listing said of
// it before it was read (size and time; a local store's file also its
// inode): a step published again under its name (a store rolled back by
// hand, trained on again) lists another time, to the second, never the
// one of a retrained file, and mostly another size.
type pulledFile struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	ID      string    `json:"id,omitempty"`
}

// sameAs reports whether the store's file, as listed now, is the one
// copied.
func (f pulledFile) sameAs(fi fileset.FileInfo) bool {
	return f.Size == fi.Size && f.ModTime.Equal(fi.ModTime) && f.ID == fi.ID
}

// readPulled reads localRun's pulledName, empty where there is none, it
// does not parse, or it records steps pulled over another latest than
// from.
func readPulled(localRun string, from int) (*pulledRecord, error) {
	name := filepath.Join(localRun, pulledName)
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return &pulledRecord{From: from}, nil
	}
	if err != nil {
		return nil, err
	}
	var r pulledRecord
	// A record that does not parse (cut short by a full disk, or of
	// another hone's format) is read as none: it only spares downloads,
	// and refused, it failed every pull of the run until it was deleted
	// by hand (TestPullReadsDamagedRecordAsNone).
	if err := json.Unmarshal(b, &r); err != nil || r.From != from {
		return &pulledRecord{From: from}, nil
	}
	return &r, nil
}

// holds reports whether the record names step name, pulled with the
// files skip leaves out now, localRun holds each file copied, and the
// store's step folder src lists the files copied as they were (one
// listing, no download; a listing that fails is "no": the step is
// pulled, and fails there if it must).
func (r *pulledRecord) holds(ctx context.Context, src, localRun, name string, skip func(string) bool) bool {
	i := slices.IndexFunc(r.Steps, func(p pulledStep) bool { return p.Name == name })
	if i < 0 {
		return false
	}
	p := r.Steps[i]
	for _, f := range p.Skipped {
		if skip == nil || !skip(f) {
			return false
		}
	}
	for _, f := range p.Files {
		if skip != nil && skip(f.Name) {
			return false
		}
		if st, err := os.Stat(filepath.Join(localRun, name, f.Name)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return r.storeHolds(ctx, src, p, skip)
}

// storeHolds reports whether the store's step folder src lists the files
// of p as they were copied, and no other that skip does not name.
func (r *pulledRecord) storeHolds(ctx context.Context, src string, p pulledStep, skip func(string) bool) bool {
	set, err := fileset.ListSet(ctx, src, "")
	if err != nil {
		return false
	}
	defer set.Close()
	matched := 0
	for i := range set.Len() {
		base := baseName(set.Name(i))
		if skip != nil && skip(base) {
			continue
		}
		j := slices.IndexFunc(p.Files, func(f pulledFile) bool { return f.Name == base })
		if j < 0 {
			return false
		}
		fi, err := set.Listed(ctx, i)
		if err != nil || !p.Files[j].sameAs(fi) {
			return false
		}
		matched++
	}
	return matched == len(p.Files)
}

// add records step p, renamed into place in localRun, atomically.
func (r *pulledRecord) add(localRun string, p pulledStep) error {
	r.Steps = append(r.Steps, p)
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return WriteFile(filepath.Join(localRun, pulledName), append(b, '\n'))
}

// pullStep copies a remote step folder into a temporary folder beside dst
// and renames it to dst (replacing a stale dst that latest never named),
// only if it holds every file its list names that skip does not, and
// says what it copied.
func pullStep(ctx context.Context, src, dst string, skip func(string) bool) (pulledStep, error) {
	got := pulledStep{Name: filepath.Base(dst)}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+tempMark+"*")
	if err != nil {
		return got, err
	}
	defer os.RemoveAll(tmp)
	// The list is read before the folder is listed: a prune deletes it
	// last, so a list read names every file a prune may have deleted
	// since.
	want, hasList, err := readStepList(ctx, src)
	if err != nil {
		return got, err
	}
	files, listed, err := readFiles(ctx, src, func(name string) bool {
		if skip != nil && skip(name) {
			got.Skipped = append(got.Skipped, name)
			return true
		}
		return false
	})
	if err != nil {
		return got, err
	}
	if hasList {
		if missing := missingFiles(want, files, skip); len(missing) > 0 {
			return got, fmt.Errorf("%s lacks %s, which its file list (%s) names: %w", fileset.DisplayName(src), strings.Join(missing, ", "), stepListName, ErrIncompleteStep)
		}
	}
	if listed == 0 {
		// An object store lists a pruned step's prefix as empty, not as
		// missing: that is no step to copy. The one listing says so;
		// files skipped all are a step still.
		return got, fmt.Errorf("%s holds no file: %w", fileset.DisplayName(src), fs.ErrNotExist)
	}
	if err := writeFiles(ctx, files, tmp); err != nil {
		return got, err
	}
	if err := os.RemoveAll(dst); err != nil {
		return got, err
	}
	for _, f := range files {
		got.Files = append(got.Files, pulledFile{Name: f.name, Size: f.info.Size, ModTime: f.info.ModTime, ID: f.info.ID})
	}
	return got, os.Rename(tmp, dst)
}

// missingFiles returns the names in want that skip does not name and
// files lacks.
func missingFiles(want []string, files []namedFile, skip func(string) bool) []string {
	var missing []string
	for _, w := range want {
		if skip != nil && skip(w) {
			continue
		}
		if !slices.ContainsFunc(files, func(f namedFile) bool { return f.name == w }) {
			missing = append(missing, w)
		}
	}
	return missing
}

// copyFiles copies the regular files directly in the folder src (not
// starting with ".", not named by skip) into the folder dst, each
// atomically; all are read before the first is written (readFiles).
func copyFiles(ctx context.Context, src, dst string, skip func(string) bool) error {
	files, _, err := readFiles(ctx, src, skip)
	if err != nil {
		return err
	}
	return writeFiles(ctx, files, dst)
}

// baseName is the last element of a listed path or URL, as
// fileset.Join takes it.
func baseName(n string) string { return fileset.Base(n) }

// namedFile is a file's base name and contents, and what the listing
// said of it before it was read (fileset.Set.Listed).
type namedFile struct {
	name string
	data []byte
	info fileset.FileInfo
}

// readFiles reads the regular files directly in the folder src (not
// starting with ".", not named by skip), all of them. They are read as a
// listed set (fileset.ListSet), over one bucket whose listing gave each
// object's size: one GET an object, not a HEAD before it as well.
// listed is how many files the listing held, skipped ones included.
func readFiles(ctx context.Context, src string, skip func(string) bool) (files []namedFile, listed int, err error) {
	set, err := fileset.ListSet(ctx, src, "")
	if err != nil {
		return nil, 0, err
	}
	defer set.Close()
	var out []namedFile
	for i := range set.Len() {
		base := baseName(set.Name(i))
		if skip != nil && skip(base) {
			continue
		}
		// Before the read, which takes what the listing said: a file
		// replaced in between is recorded as older than it is, so not
		// taken as copied (pulledFile), never the other way round.
		info, err := set.Listed(ctx, i)
		if err != nil {
			return nil, 0, err
		}
		b, err := set.ReadFile(ctx, i)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, namedFile{base, b, info})
	}
	return out, set.Len(), nil
}

// writeFiles writes files into the folder dst, each atomically.
func writeFiles(ctx context.Context, files []namedFile, dst string) error {
	if !fileset.IsURL(dst) && len(files) > 0 {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := fileset.WriteFile(ctx, fileset.Join(dst, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// missingLatestStep is Pull's error when the store's listing lacks the
// step its latest named. Either a trainer moved latest on and pruned that
// step in between (latest reads otherwise now: pull again), or latest
// still names it, and the store is broken: a publish cut short before it
// uploaded the step, or a folder removed by hand. Pulling again would not
// help there, so the error says which it is; and so it does where the
// bucket itself went since the listing.
func missingLatestStep(ctx context.Context, remoteRun string, named Step) error {
	now, ok, err := remoteLatest(ctx, remoteRun)
	if errors.Is(err, fileset.ErrNoBucket) {
		// Gone since the listing: no newer publish comes to it, so not
		// "pull again".
		return fmt.Errorf("pull %s: %w", fileset.DisplayName(remoteRun), err)
	}
	if err == nil && ok && now.N == named.N {
		return fmt.Errorf("pull %s: its latest names %s, which the store does not hold: a publish was cut short or the step folder was removed; point the store's latest at a step it holds, or publish the run again from a copy that has the step", fileset.DisplayName(remoteRun), named.Name)
	}
	return fmt.Errorf("pull %s: its latest named %s, which it no longer holds (pruned by a newer publish; pull again)", fileset.DisplayName(remoteRun), named.Name)
}
