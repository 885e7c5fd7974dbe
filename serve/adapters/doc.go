// Package adapters keeps the LoRA adapters hone-serve serves and picks up
// new ones that hone-train writes, without a restart.
//
// Layout watched: the run folders format/runfolder defines,
// DIR/<run>/step-<N>/ (a PEFT adapter folder, N usually zero-padded:
// step-000042) and DIR/<run>/latest, a file naming the current step folder.
// Without a latest file the highest step folder is taken (runfolder.Locate).
// latest is what the operator says is current: rolling it back to an older
// step makes "<run>" answer with that step.
//
// A Registry polls DIR (Watch) and loads the current step off the request
// path; the swap is one pointer update under a lock, so a request that
// resolved its adapter before keeps using it until it finishes. A loaded
// step is read again only when its folder changes. A folder that fails to
// load (half-written, wrong shapes, a NaN or infinite weight) is logged once
// and skipped until it changes; the previous step keeps serving. A step
// that reads fine but cannot be placed on the backend (Options.Backend out
// of memory for now) is retried at every poll, logged once. Per run
// MaxKeep steps stay loaded and are addressable as "<run>@<N>": the current
// one and the most recently current others. A run folder deleted and made
// anew (a run retrained under its name; hone-serve's copy of a run
// published anew) holds another run: the steps read from the old folder
// whose step folders are gone or hold other files are dropped, the current
// one once the new folder's step loads, so that "<run>@<N>" never names
// the old run's weights. A DIR that has not existed
// since the registry was made (hone-serve started before hone-train's first
// step) is said once at info, the base model served meanwhile; a DIR that
// existed and went, or cannot be read, and a bad latest file are warned
// once, and again only when the condition changes or comes back.
//
// A step whose adapter_config.json base_model_name_or_path names another
// model than the one served (Options.ModelPath, ModelName) still loads when
// its shapes match, with one warning while the run's steps keep naming
// that base: a hub id "Org/Name" and a folder ".../Name" are the same
// model, and "." (hone-train records --model as given) names none.
//
// Lifetime: Resolve hands out a Ref, a hold on the adapter that its user
// (hone-serve: the engine, until it retired the request's last sequence)
// gives up with Release. The registry holds each step while it is loaded.
// A step it drops (beyond MaxKeep, a reload of the same step, its run
// folder made anew, Close) stays
// on the backend while any Ref holds it, and the last hold to go frees its
// weights (model.Adapter.Free) exactly once: at once for a step nothing
// uses, after the last request on it otherwise. A Ref released twice
// counts once.
//
// Names are checked (runfolder.ParseServed) so that no request can name a
// path, and nothing is read through a symbolic link that leads outside DIR:
// a run folder, step folder or adapter file that resolves elsewhere is
// refused with runfolder.ErrOutside (links inside DIR are followed).
package adapters
