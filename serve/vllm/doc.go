// Package vllm is hone-serve's front for a vLLM server (--upstream URL):
// for models too big for the embedded engine, the OpenAI routes are
// forwarded to vLLM's OpenAI server, and each new adapter step that
// hone-train writes is pushed to vLLM through its runtime LoRA API, so the
// rest of the pipeline (collect, score, train) cannot tell the difference.
//
// What it owns:
//
//   - Front, an http.Handler: an allow-list of routes (POST
//     /v1/chat/completions and /v1/completions, GET /v1/models behind our
//     bearer key and sent with vLLM's; GET /health and /metrics open and
//     sent without any key), matched on the path exactly as sent, so a
//     doubled slash or an escape is no route; everything else is 404 and
//     never reaches vLLM. Our key check and body cap (401/413 in OpenAI's
//     error shape) come before anything reaches vLLM; the request's
//     "model" rewritten from "<run>" to the newest loaded "<run>@<step>";
//     responses, SSE streams included, copied through unchanged and flushed
//     as they arrive; GET /v1/models with a "<run>" alias entry per run.
//     Clients cannot reach vLLM's load/unload endpoints, /sleep,
//     /reset_prefix_cache, /invocations or any other route through the front.
//   - Sync (and Watch, which calls it on a timer): for each valid run in the
//     adapters folder, the step named by DIR/<run>/latest (else the highest
//     step-N folder) is loaded with
//     POST /v1/load_lora_adapter {"lora_name":"<run>@<step>","lora_path":"<abs dir>"}
//     and only after that succeeds does "<run>" switch to it; then versions
//     beyond KeepAdapters per run are unloaded, oldest first, with
//     POST /v1/unload_lora_adapter {"lora_name":"<run>@<step>"}.
//     A version that a request in flight was sent to stays loaded until
//     that request ended (the Sync after unloads it), so that with
//     KeepAdapters 1 the new step's load does not unload the version
//     under the requests still on their way to vLLM.
//     latest is what the operator says is current: rolled back to a step
//     still loaded, "<run>" switches to it without a call. A step folder
//     written again since vLLM read it (its modification time changed: a
//     run redone from an earlier step writes step-N anew) is loaded again:
//     "<run>@<step>" is unloaded, then loaded from the new folder, and
//     "<run>" switches to it only after that succeeds; meanwhile "<run>"
//     stays on the previous step (if the replaced step was current, on the
//     most recently current other version whose folder is unchanged) and
//     "<run>@<step>" is no loaded version. While requests sent to the old
//     version have not ended, its unload and the new load wait for them
//     (the Sync after they ended does both), as for KeepAdapters above. An
//     unload that fails leaves all as it was, to be tried again at the
//     next Sync. Of a run folder that is the same, only the current step
//     is checked, as in the embedded server: a replaced folder of a step
//     that is merely kept loaded is noticed when it becomes current. A run
//     folder deleted and made anew (a run retrained under its name;
//     hone-serve's copy of a run published anew, swapped in) holds another
//     run, and the embedded server's test decides (serve/adapters): the
//     versions read from the old folder whose step folders are gone or
//     written since are unloaded, as the replaced step above is, so that
//     "<run>@<step>" never names the old run's weights; the kept ones
//     before the new current step loads, the current one after, so that
//     "<run>" answers throughout (but for a current step the new run has
//     too: vLLM holds one version per name, and it is reloaded as above).
//     A step folder
//     that is not a whole adapter (an adapter file that is a named pipe
//     or a device is refused unread), whose weights hold a NaN or infinite
//     value, or that resolves through a link to outside the adapters folder
//     is never pushed to vLLM. A failed load is logged, the previous version
//     keeps serving, and the same folder is not retried until its
//     modification time changes (vLLM refuses with 400 or 404; a load
//     vLLM gave no answer to, as while it is still starting, or answered
//     with a 5xx, as a gateway does while vLLM restarts, is no refusal:
//     it is tried again at the next Sync, reported once); a missing adapters folder or a bad latest
//     file is reported once, and again only when it changes or comes back.
//     A 400 "has already been loaded" answer counts as loaded, so a
//     restarted front re-adopts what a still-running vLLM holds; a 404
//     "cannot be found" answer to an unload counts as unloaded, so a
//     restarted vLLM does not leave the front retrying the unload forever,
//     and vLLM's 404 "does not exist" for a version the front loaded makes
//     the next Sync load the current step again: the version "<run>" maps
//     to is loaded again first, from its unchanged folder, so a previous
//     step kept serving behind a refused one still serves after the
//     restart. A re-adopted version is
//     taken to be the folder as it is then: a step written again while no
//     front ran is not noticed. A run folder that is deleted (gone from
//     the adapters folder, or a link to nothing) at two Syncs in a row
//     (one is not enough: a run folder swapped in by two renames is
//     missing for a moment between them) has its versions
//     unloaded then, stale ones included, each once the
//     requests sent to it ended: "<run>" and "<run>@<step>" resolve to
//     none of them from then on, and vLLM does not keep their weights,
//     and --max-loras slots, for good. The run is forgotten once all are
//     unloaded; a failed unload is tried again at the next Sync. (The
//     embedded server, serve/adapters, keeps serving a deleted run: its
//     memory is hone-serve's own; vLLM's LoRA slots are counted.)
//   - Serve: the front on a listener with Watch running; on cancel, new
//     requests get 503 while those in flight, streams included, finish.
//
// vLLM must run with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (without it the
// load/unload routes do not exist and every load fails with 404) and with
// --enable-lora, --max-lora-rank at least the adapters' rank and
// --max-loras / --max-cpu-loras at least (KeepAdapters + 1) × runs: a
// version that requests in flight still use stays loaded past KeepAdapters
// until they end. Versioned names
// are used instead of load_inplace so that requests in flight keep the
// weights they started with; a replaced step folder is reloaded by unload
// and load, not load_inplace: load_inplace swaps the weights under the
// requests in flight on the name, where vLLM's OpenAI server unloads only
// the name and gives the new load a new adapter id, so those requests keep
// the version they started with; and vLLM releases without load_inplace
// answer it "has already been loaded", which the front takes for success. The adapter folder must be readable by the
// vLLM process at the same absolute path (shared disk). An adapters folder
// in object storage reaches the front as a local one: hone-serve pulls it
// into a cache folder (format/runfolder.Pull, each step whole before the
// cache's latest moves) and the front syncs from that folder.
package vllm
