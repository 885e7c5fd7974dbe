package vllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/format/urlmask"
)

// Sync brings vLLM in step with the adapters folder once: for each run
// whose current step (the one latest names, else the newest folder) is not
// what "<run>" maps to, it loads that step or switches to it if still
// loaded, then unloads the versions beyond KeepAdapters. It returns the
// joined errors of what failed; what succeeded stays done. A condition
// already reported (a missing folder, a bad latest file, a link out of the
// folder, a refused step folder that has not changed) is not reported
// again until it changes or comes back.
func (f *Front) Sync(ctx context.Context) error {
	if f.o.AdaptersDir == "" {
		return nil
	}
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	runs, err := runfolder.Runs(f.o.AdaptersDir)
	if err != nil {
		return f.reportOnce("", fmt.Errorf("vllm: reading adapters folder %s: %w", f.o.AdaptersDir, err))
	}
	f.reportOnce("", nil)
	f.forgetGone(ctx)
	errs := []error{f.dropGoneRuns(ctx, runs)}
	for _, run := range runs {
		if err := f.syncRun(ctx, run); err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// reportOnce returns err unless the same error was the last one returned
// for condition key ("" for the folder, else the run); a nil err clears the
// key so that the condition is reported again if it comes back.
func (f *Front) reportOnce(key string, err error) error {
	if f.reported == nil {
		f.reported = map[string]string{}
	}
	if err == nil {
		delete(f.reported, key)
		return nil
	}
	if f.reported[key] == err.Error() {
		return nil
	}
	f.reported[key] = err.Error()
	return err
}

func (f *Front) syncRun(ctx context.Context, run string) error {
	// Before the step is located: a run folder swapped in meanwhile is
	// taken for the old one, whose steps go at the next Sync, never the
	// other way round.
	runDir, _ := runfolder.StatFolder(filepath.Join(f.o.AdaptersDir, run))
	f.mu.Lock()
	rs := f.runs[run]
	if rs == nil {
		// Only Sync (under syncMu) changes a runState; readers take mu.
		rs = &runState{current: -1, failed: map[int]time.Time{}, path: map[int]string{}, stamp: map[int]time.Time{}, runDir: map[int]runfolder.FolderID{}, stale: map[int]bool{}}
		f.runs[run] = rs
	}
	f.mu.Unlock()
	// Before the step is looked for: a run trained again under its name
	// has a folder before its first step, and the old run's steps must
	// not be served as "<run>@<step>" until then
	// (TestSyncReplacedRunWithNoStepYet).
	replacedRunErr := f.dropReplacedRun(ctx, run, rs, runDir)
	found, err := runfolder.Locate(f.o.AdaptersDir, run)
	if errors.Is(err, os.ErrNotExist) {
		return errors.Join(f.reportOnce(run, nil), replacedRunErr) // no step yet
	}
	if err != nil {
		return errors.Join(f.reportOnce(run, fmt.Errorf("vllm: %w", err)), replacedRunErr)
	}
	f.reportOnce(run, nil)
	step := found.N
	dir, err := filepath.Abs(found.Dir)
	if err != nil {
		return fmt.Errorf("vllm: run %s: %w", run, err)
	}
	var loadErr error
	// retry: the failure is no refusal of the folder (vLLM gave no answer,
	// as while it is still starting, or the replaced version's unload
	// failed), so it is tried again at the next Sync.
	retry := false
	stamp := folderStamp(dir)
	// A loaded step whose folder was written again since vLLM read it (a
	// redone run: latest moved back and the step trained again) is held by
	// vLLM with the old weights under the same name; a stale one still is,
	// until its requests ended.
	replaced := rs.stale[step] || (slices.Contains(rs.loaded, step) && !rs.stamp[step].Equal(stamp))
	if rs.current != step || replaced {
		if at, ok := rs.failed[step]; ok && at.Equal(stamp) {
			// Failed before and unchanged since: not tried again, but an
			// unload that failed earlier still is, or an old version would
			// stay in vLLM, beyond KeepAdapters, until the next new step.
			return errors.Join(replacedRunErr, f.unloadOld(ctx, run, rs))
		}
		if slices.Contains(rs.loaded, step) && !replaced {
			f.switchTo(run, rs, step)
		} else if err := checkFolder(found.Real); err != nil {
			loadErr = err
		} else {
			retry, loadErr = f.loadStep(ctx, run, rs, step, dir, stamp, runDir, replaced)
		}
		// The step current until now, if of the old run folder, once
		// "<run>" maps to the new one's.
		replacedRunErr = errors.Join(replacedRunErr, f.dropReplacedRun(ctx, run, rs, runDir))
		// An outage is no refusal of the folder: the load is tried again at
		// the next Sync (reported once while it lasts), not held back until
		// the folder changes.
		outageKey := run + "/load"
		if loadErr != nil {
			loadErr = fmt.Errorf("vllm: loading %s from %s (still serving %s): %w", runfolder.ServedName(run, step), dir, f.servingName(run, rs), loadErr)
		}
		switch {
		case retry:
			loadErr = f.reportOnce(outageKey, loadErr)
		case loadErr != nil:
			f.reportOnce(outageKey, nil)
			rs.failed[step] = stamp
			f.o.Log.Warn("vllm: adapter refused", "err", loadErr)
		default:
			f.reportOnce(outageKey, nil)
			delete(rs.failed, step)
		}
	}
	return errors.Join(loadErr, replacedRunErr, f.unloadOld(ctx, run, rs))
}

// loadStep loads dir (whose folder stamp is st, in run folder runDir) as
// "<run>@<step>" and points "<run>" at it. A step vLLM holds from a folder since replaced is
// unloaded first (dropReplaced): vLLM refuses a second load under a loaded
// name, and load_inplace would swap the weights under the requests in
// flight on that name. While requests sent to that version have not ended,
// neither is done: retry with no error, tried again at the next Sync.
// retry reports a failure that is no refusal of the folder.
func (f *Front) loadStep(ctx context.Context, run string, rs *runState, step int, dir string, st time.Time, runDir runfolder.FolderID, replaced bool) (retry bool, err error) {
	name := runfolder.ServedName(run, step)
	if replaced {
		waiting, err := f.dropReplaced(ctx, run, rs, step)
		if err != nil || waiting {
			return true, err
		}
	}
	if err := f.load(ctx, name, dir); err != nil {
		return !refused(err), err
	}
	f.mu.Lock()
	rs.loaded = append(rs.loaded, step)
	rs.path[step] = dir
	rs.stamp[step] = st
	if runDir.Known() {
		rs.runDir[step] = runDir
	} else {
		delete(rs.runDir, step)
	}
	rs.current = step
	f.mu.Unlock()
	f.o.Log.Info("vllm: adapter loaded", "name", name, "path", dir)
	return false, nil
}

// dropReplaced unloads the version of step that vLLM read from a folder
// written again since, so that the step can be loaded from the new one.
// Until that load, "<run>" maps to the most recently current other version
// whose folder is unchanged, as while a new step loads (none left: "<run>"
// goes to vLLM as it is and gets its 404), and "<run>@<step>" is no
// loaded version: neither may reach vLLM between the unload and the load.
// While requests sent to the old version have not ended, it is not
// unloaded (vLLM would answer one still on its way "does not exist", and
// cut the stream of one it holds): it is kept stale and waiting is true,
// for a later Sync to unload it (here or in unloadOld). A failed unload of
// a version not yet stale puts everything back as it was, to be tried
// again; a stale one stays stale.
func (f *Front) dropReplaced(ctx context.Context, run string, rs *runState, step int) (waiting bool, err error) {
	name := runfolder.ServedName(run, step)
	// Only Sync (under syncMu) changes rs, so it is read here without mu.
	prevCurrent, prevLoaded, wasStale := rs.current, slices.Clone(rs.loaded), rs.stale[step]
	next := rs.current
	if next == step {
		next = -1
		for _, s := range slices.Backward(rs.loaded) {
			if s != step && folderStamp(rs.path[s]).Equal(rs.stamp[s]) {
				next = s
				break
			}
		}
	}
	f.mu.Lock()
	rs.current = next
	rs.loaded = slices.DeleteFunc(rs.loaded, func(x int) bool { return x == step })
	// use counts a request only while its version is in rs.loaded, under
	// mu: from here on the count can only fall.
	requests := f.inUse[name]
	if requests > 0 {
		rs.stale[step] = true
	}
	f.mu.Unlock()
	if requests > 0 {
		if !wasStale {
			f.o.Log.Info("vllm: step folder replaced since its load; loading it again once the requests using it end", "name", name, "requests", requests, "serving", f.servingName(run, rs))
		}
		return true, nil
	}
	if !wasStale {
		f.o.Log.Info("vllm: step folder replaced since its load; loading it again", "name", name, "serving", f.servingName(run, rs))
	}
	if err := f.unload(ctx, name); err != nil {
		if !wasStale {
			f.mu.Lock()
			rs.current, rs.loaded = prevCurrent, prevLoaded
			f.mu.Unlock()
		}
		return false, fmt.Errorf("unloading the version read before its folder was replaced: %w", err)
	}
	f.mu.Lock()
	delete(rs.stale, step)
	delete(rs.path, step)
	delete(rs.stamp, step)
	delete(rs.runDir, step)
	f.mu.Unlock()
	return false, nil
}

// dropReplacedRun unloads the versions of run, but the one "<run>" maps
// to, that vLLM read from a run folder since deleted and made anew (a run
// retrained under its name; hone-serve's copy of a run published anew,
// swapped in): another folder than runDir, the run's folder now, whose
// step folder is gone or was written since (TestSyncReplacedRunUnloadsOldSteps).
// Named "<run>@<step>", the old run's steps answered for the new run's, or
// for steps it has not reached. The current one keeps "<run>" answering
// until the new folder's step loads (syncRun calls this again then), as
// when a step fails to load the previous one keeps serving. They leave
// loaded at once, so no request resolves to them, and are unloaded as
// stale versions are (unloadStale): at once, or once the requests sent to
// them ended; a step the new run has too is then loaded from its folder.
// A step whose folder is as vLLM read it is kept: a file system whose
// folder identities change (a network mount) unloads nothing it should
// not. This is the test serve/adapters makes (its dropReplaced).
func (f *Front) dropReplacedRun(ctx context.Context, run string, rs *runState, runDir runfolder.FolderID) error {
	if !runDir.Known() {
		return nil
	}
	// Only Sync (under syncMu) changes rs, so it is read here without mu.
	var old []int
	for _, s := range rs.loaded {
		if was := rs.runDir[s]; s != rs.current && was.Known() && !was.Same(runDir) && !folderStamp(rs.path[s]).Equal(rs.stamp[s]) {
			old = append(old, s)
		}
	}
	if len(old) == 0 {
		return nil
	}
	f.mu.Lock()
	rs.loaded = slices.DeleteFunc(rs.loaded, func(x int) bool { return slices.Contains(old, x) })
	for _, s := range old {
		rs.stale[s] = true
	}
	f.mu.Unlock()
	for _, s := range old {
		f.o.Log.Info("vllm: run folder deleted and made anew; unloading a step read from the old one", "name", runfolder.ServedName(run, s), "serving", f.servingName(run, rs))
	}
	return f.unloadStale(ctx, run, rs, "read before its run folder was replaced")
}

// dropGoneRuns unloads the versions of each run whose folder is no longer
// in the adapters folder (runs: the ones that are), a run the operator
// deleted: Sync visits only the runs it finds, so nothing else would ever
// unload them, and vLLM would keep their weights in GPU memory, and a
// --max-loras slot, for good. They leave loaded at once, so that no
// request resolves to them, and are unloaded as stale versions are
// (unloadStale): at once, or by a Sync after the requests sent to them
// ended; a failed unload is tried again at the next Sync. The run is
// forgotten once vLLM holds none of its versions; while it does, a run
// folder made again under its name is synced as a replaced run.
func (f *Front) dropGoneRuns(ctx context.Context, runs []string) error {
	f.mu.RLock()
	known := sortedKeys(f.runs)
	f.mu.RUnlock()
	var errs []error
	for _, run := range known {
		// Only Sync (under syncMu) changes rs, so it is read here without mu.
		rs := f.runs[run]
		if slices.Contains(runs, run) || !runGone(filepath.Join(f.o.AdaptersDir, run)) {
			rs.gone = 0
			continue
		}
		if rs.gone++; rs.gone < 2 {
			continue // gone for a moment, or for good: the next Sync tells
		}
		if len(rs.loaded) > 0 {
			f.o.Log.Info("vllm: run folder deleted; unloading its versions once the requests using them end", "run", run, "versions", len(rs.loaded)+len(rs.stale))
		}
		f.mu.Lock()
		for _, s := range rs.loaded {
			rs.stale[s] = true
		}
		rs.loaded, rs.current = nil, -1
		f.mu.Unlock()
		errs = append(errs, f.unloadStale(ctx, run, rs, "of a run folder since deleted"))
		if len(rs.stale) > 0 {
			continue
		}
		f.mu.Lock()
		delete(f.runs, run)
		f.mu.Unlock()
		// Reported again should the run come back with the same fault.
		f.reportOnce(run, nil)
		f.reportOnce(run+"/load", nil)
		f.o.Log.Info("vllm: run folder deleted; all its versions unloaded", "run", run)
	}
	return errors.Join(errs...)
}

// runGone reports whether the run folder at path is gone: absent, a link
// to nothing, or no folder now. A folder that cannot be looked at for
// another reason (an I/O error) is not taken for deleted: its versions
// keep serving.
func runGone(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return !st.IsDir()
}

// unloadStale unloads the stale versions of run (dropReplaced,
// dropReplacedRun, dropGoneRuns) whose requests have all ended: the step
// may be current no more, and the old version must not stay in vLLM until
// the step is loaded again. A failed unload keeps the version stale, to be
// tried again at the next Sync. why says, in its errors and log, why the
// versions went stale.
func (f *Front) unloadStale(ctx context.Context, run string, rs *runState, why string) error {
	f.mu.Lock()
	var done []int
	for _, s := range slices.Sorted(maps.Keys(rs.stale)) {
		if f.inUse[runfolder.ServedName(run, s)] == 0 {
			done = append(done, s)
		}
	}
	f.mu.Unlock()
	var errs []error
	for _, s := range done {
		name := runfolder.ServedName(run, s)
		if err := f.unload(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("vllm: unloading %s, %s: %w", name, why, err))
			continue
		}
		f.mu.Lock()
		delete(rs.stale, s)
		delete(rs.path, s)
		delete(rs.stamp, s)
		delete(rs.runDir, s)
		f.mu.Unlock()
		f.o.Log.Info("vllm: stale adapter unloaded, its requests ended", "name", name, "stale", why)
	}
	return errors.Join(errs...)
}

// forgetGone drops the versions vLLM said it does not hold (noteGone), so
// that syncRun loads the current one again. The version "<run>" maps to is
// loaded again here, from the folder vLLM read it from while that is
// unchanged: it may be the previous step, kept serving because the latest
// was refused, and syncRun does not retry a refused step whose folder has
// not changed, so dropping it would leave the run serving nothing. A load
// that gets no answer keeps it marked, to be tried at the next Sync.
// Called under syncMu.
func (f *Front) forgetGone(ctx context.Context) {
	type lost struct {
		name, path string
		rs         *runState
		step       int
	}
	var served []lost
	f.mu.Lock()
	for name := range f.gone {
		v, err := runfolder.ParseServed(name)
		rs := f.runs[v.Run]
		if err != nil || rs == nil || !slices.Contains(rs.loaded, v.Step) {
			continue
		}
		if rs.current == v.Step && folderStamp(rs.path[v.Step]).Equal(rs.stamp[v.Step]) {
			served = append(served, lost{name, rs.path[v.Step], rs, v.Step})
			continue
		}
		dropLoaded(rs, v.Step)
		f.o.Log.Warn("vllm: vLLM no longer holds a loaded adapter (restarted?); loading the current step again", "name", name)
	}
	clear(f.gone)
	f.mu.Unlock()
	for _, l := range served {
		err := f.load(ctx, l.name, l.path)
		switch {
		case err == nil:
			f.o.Log.Warn("vllm: vLLM no longer held the adapter served (restarted?); loaded it again", "name", l.name, "path", l.path)
			continue
		case !refused(err):
			f.mu.Lock()
			f.gone[l.name] = true // no answer: tried again at the next Sync
			f.mu.Unlock()
			f.o.Log.Warn("vllm: vLLM no longer holds the adapter served (restarted?); loading it again failed", "name", l.name, "err", err)
			continue
		}
		f.mu.Lock()
		dropLoaded(l.rs, l.step)
		f.mu.Unlock()
		f.o.Log.Warn("vllm: vLLM no longer holds the adapter served (restarted?) and refused it again; loading the current step", "name", l.name, "err", err)
	}
}

// dropLoaded forgets that vLLM holds step of rs. Called under mu.
func dropLoaded(rs *runState, step int) {
	rs.loaded = slices.DeleteFunc(rs.loaded, func(x int) bool { return x == step })
	delete(rs.path, step)
	delete(rs.stamp, step)
	delete(rs.runDir, step)
	if rs.current == step {
		rs.current = -1
	}
}

func (f *Front) servingName(run string, rs *runState) string {
	if rs.current < 0 {
		return "nothing"
	}
	return runfolder.ServedName(run, rs.current)
}

// switchTo points "<run>" at a step vLLM still holds (a rolled-back latest
// file) and makes it the most recently current one.
func (f *Front) switchTo(run string, rs *runState, step int) {
	f.mu.Lock()
	rs.current = step
	rs.loaded = append(slices.DeleteFunc(rs.loaded, func(x int) bool { return x == step }), step)
	f.mu.Unlock()
	f.o.Log.Info("vllm: serving a loaded step", "name", runfolder.ServedName(run, step))
}

// unloadOld unloads loaded versions other than the current one beyond the
// keep count, least recently current first. A version a request in flight
// was sent to (inUse) is kept, beyond the count, until a Sync after its
// last request ended: with KeepAdapters 1 the version "<run>" mapped to a
// moment ago would otherwise be unloaded under the requests still on their
// way to vLLM. A version being unloaded no longer resolves (Model), so no
// request is sent to it between the check and the unload; a failed unload
// puts it back, to be retried at the next Sync. Stale versions whose
// requests ended are unloaded too (unloadStale).
func (f *Front) unloadOld(ctx context.Context, run string, rs *runState) error {
	staleErr := f.unloadStale(ctx, run, rs, "read before its folder was replaced")
	f.mu.Lock()
	prev := slices.Clone(rs.loaded)
	var others []int
	for _, s := range rs.loaded {
		if s != rs.current {
			others = append(others, s)
		}
	}
	extra := len(others) - (f.o.KeepAdapters - 1)
	if rs.current < 0 {
		extra = len(others) - f.o.KeepAdapters
	}
	var drop []int
	for _, s := range others[:max(extra, 0)] { // least recently current first
		if n := f.inUse[runfolder.ServedName(run, s)]; n > 0 {
			f.o.Log.Debug("vllm: adapter kept loaded while requests use it", "name", runfolder.ServedName(run, s), "requests", n)
			continue
		}
		drop = append(drop, s)
	}
	rs.loaded = slices.DeleteFunc(rs.loaded, func(x int) bool { return slices.Contains(drop, x) })
	f.mu.Unlock()
	var errs []error
	var failed []int
	for _, s := range drop {
		if err := f.unload(ctx, runfolder.ServedName(run, s)); err != nil {
			errs = append(errs, fmt.Errorf("vllm: unloading %s: %w", runfolder.ServedName(run, s), err))
			failed = append(failed, s)
			continue
		}
		f.mu.Lock()
		delete(rs.path, s)
		delete(rs.stamp, s)
		delete(rs.runDir, s)
		f.mu.Unlock()
		f.o.Log.Info("vllm: adapter unloaded", "name", runfolder.ServedName(run, s))
	}
	if len(failed) > 0 {
		// Back in their places: only Sync (under syncMu, as here) changes
		// rs.loaded, so prev less what was unloaded is the list as it is.
		f.mu.Lock()
		rs.loaded = slices.DeleteFunc(prev, func(x int) bool { return slices.Contains(drop, x) && !slices.Contains(failed, x) })
		f.mu.Unlock()
	}
	return errors.Join(append(errs, staleErr)...)
}

// load asks vLLM to load dir as name. vLLM answering that the name is
// already loaded counts as success (a restarted front finds its own work).
func (f *Front) load(ctx context.Context, name, dir string) error {
	err := f.call(ctx, "/v1/load_lora_adapter", map[string]string{"lora_name": name, "lora_path": dir})
	var ce *callError
	if errors.As(err, &ce) && ce.status == http.StatusBadRequest && strings.Contains(ce.body, "already been loaded") {
		return nil
	}
	return err
}

// unload asks vLLM to unload name. vLLM answering that it holds no such
// adapter ("cannot be found": 404, 400 in older releases; it restarted since
// the load) counts as success: the version is gone either way, and
// retrying would fail forever.
func (f *Front) unload(ctx context.Context, name string) error {
	err := f.call(ctx, "/v1/unload_lora_adapter", map[string]string{"lora_name": name})
	var ce *callError
	if errors.As(err, &ce) && (ce.status == http.StatusNotFound || ce.status == http.StatusBadRequest) && strings.Contains(ce.body, "cannot be found") {
		return nil
	}
	return err
}

// refused reports whether err is vLLM refusing a load: its load route
// answers a folder it cannot take with 400 (BadRequestError) or 404
// (NotFoundError). A 5xx is no refusal of the folder: a gateway before a
// vLLM that is restarting (502, 503, 504), or vLLM's 500 as its engine
// dies; like a call with no answer, it is tried again at the next Sync.
func refused(err error) bool {
	var ce *callError
	return errors.As(err, &ce) && ce.status < 500
}

// callError is a non-200 answer of vLLM's LoRA API.
type callError struct {
	status int
	body   string
}

func (e *callError) Error() string {
	msg := fmt.Sprintf("vLLM answered %d: %s", e.status, strings.TrimSpace(e.body))
	switch {
	case e.status == http.StatusNotFound && strings.Contains(e.body, "No adapter found"):
		// vLLM's own answer to a folder it cannot read: the route works.
		msg += " (vLLM must read the adapters folder at the same absolute path as hone-serve)"
	case e.status == http.StatusNotFound:
		msg += " (is vLLM running with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora?)"
	}
	return msg
}

// call POSTs body as JSON to vLLM's path and wants 200, within
// Options.CallTimeout.
func (f *Front) call(ctx context.Context, path string, body any) error {
	ctx, cancel := context.WithTimeout(ctx, f.o.CallTimeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.base.JoinPath(path).String(), bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if f.o.UpstreamKey != "" {
		req.Header.Set("Authorization", "Bearer "+f.o.UpstreamKey)
	}
	resp, err := f.o.Client.Do(req)
	if err != nil {
		return urlmask.ShownErr(err) // net/http masks a password, not a token user
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return &callError{status: resp.StatusCode, body: string(msg)}
	}
	return nil
}

// checkFolder refuses a step folder that is not a whole PEFT adapter, or
// whose weights hold a NaN or infinite value, before vLLM is asked to read
// it: vLLM would serve such an adapter and answer with garbage.
func checkFolder(dir string) error {
	// Stat first: opening a named pipe with no writer, or a device, to
	// read it blocks, and Sync with it, for good.
	if err := fileset.CheckRegular(filepath.Join(dir, peft.ConfigName)); err != nil {
		return fmt.Errorf("adapter folder: %w", err)
	}
	// Bounded: a gigabyte under the config's name (a weights file copied
	// to the wrong name) was read whole into memory to be refused.
	cfg, err := peft.ReadConfigFile(filepath.Join(dir, peft.ConfigName))
	if err != nil {
		return fmt.Errorf("adapter folder: %w", err)
	}
	var c struct {
		R int `json:"r"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil || c.R <= 0 {
		return fmt.Errorf("%s: not a LoRA adapter_config.json (want a positive \"r\")", filepath.Join(dir, "adapter_config.json"))
	}
	if err := fileset.CheckRegular(filepath.Join(dir, "adapter_model.safetensors")); err != nil {
		return fmt.Errorf("adapter folder: %w", err)
	}
	st, err := os.Stat(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return fmt.Errorf("adapter folder: %w", err)
	}
	if st.Size() < 8 {
		return fmt.Errorf("%s: truncated (%d bytes)", filepath.Join(dir, "adapter_model.safetensors"), st.Size())
	}
	err = peft.CheckWeightsFile(filepath.Join(dir, "adapter_model.safetensors"))
	if errors.Is(err, safetensors.ErrNonFinite) {
		return fmt.Errorf("%w; this adapter is not served", err)
	}
	return err
}

// folderStamp is the newest modification time of dir and its two files,
// so a rewritten folder is tried again.
func folderStamp(dir string) time.Time {
	var t time.Time
	for _, p := range []string{dir, filepath.Join(dir, "adapter_config.json"), filepath.Join(dir, "adapter_model.safetensors")} {
		if st, err := os.Stat(p); err == nil && st.ModTime().After(t) {
			t = st.ModTime()
		}
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
