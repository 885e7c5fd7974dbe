// Package adapters keeps the LoRA adapters hone-serve serves and picks up
// new ones that hone-train writes, without a restart.
//
// Layout watched: DIR/<run>/step-<N>/ (a PEFT adapter folder, N usually
// zero-padded: step-000042) and DIR/<run>/latest, a file naming the newest
// step folder. Without a latest file the highest step folder is taken.
//
// A Registry polls DIR (Watch) and loads a new step off the request path;
// the swap is one pointer update under a lock, so a request that resolved
// its adapter before keeps using it until it finishes. A folder that fails
// to load (half-written, wrong shapes) is logged and skipped until it
// changes; the previous step keeps serving. Per run the newest MaxKeep
// steps stay loaded and are addressable as "<run>@<N>"; "<run>" means the
// newest. Names are checked so that no request can name a path.
package adapters
