// Package engine runs generation for hone-serve: a scheduler that keeps a
// running batch of sequences and lets new requests join it between decode
// steps (continuous batching), a KV cache with a memory budget that
// implements train/model's Cache interface, and the per-sequence sampler.
//
// What it owns:
//
//   - KVCache: each sequence books prompt+max_tokens tokens against the
//     byte budget when its request is admitted, so a running sequence never
//     runs out of memory mid-way; the sum of reservations stays under the
//     budget and requests that do not fit yet wait in the queue. Memory is
//     allocated as the sequence grows (doubling), not at booking.
//   - Engine: a queue bounded in sequences, each request counting its n
//     (Submit answers ErrQueueFull, QueueRoom asks first), admission in
//     arrival order, one model.Step per adapter group per iteration (prefill
//     of new sequences and one decode token of running ones in the same
//     step), prefix sharing for n > 1 (the prompt is prefilled once and its
//     KV rows copied to the other n-1 sequences), cancellation through each
//     request's context, and Shutdown that drains what is running.
//   - Prefix caching (Config.PrefixCaching, prefix.go): a finished
//     sequence's KV rows stay in the cache, and a later prompt under the
//     same adapter that starts with their tokens prefills only the rest;
//     kept rows fill the budget's spare room and are evicted, least
//     recently used first, when new sequences need it. A request admitted
//     while another still prefills a prompt sharing at least 16 tokens
//     with its own waits for those rows and copies them, so a GRPO
//     group's episodes, each its own request, prefill their prompt once;
//     one whose prompt begins with a decoding sequence's tokens copies
//     that sequence's rows at once.
//   - Sampling: temperature, top_k, top_p, presence/frequency penalties,
//     stop strings, stop token ids, max_tokens, raw-model logprobs and
//     top_logprobs; a per-sequence PCG seeded from (seed, choice index), so
//     the same seed gives the same tokens whatever else is in the batch.
//   - Choosing on the device: when the model's backend is a
//     kernels.RowChooser (kernels/cuda; not run on a GPU yet), the step's
//     logits stay in its memory (model.StepDevice) and the backend chooses
//     the tokens of every sequence whose request needs nothing but the
//     row's distribution — greedy, or temperature sampling without top_k
//     below the vocabulary, top_p, penalties, a constraint or top_logprobs
//     — with the uniform the host's sampler would have drawn from the
//     sequence's stream, and the chosen token's logprob; only the other
//     sequences' rows are copied to the host for the host's sampler.
//     Greedy tokens are the host's; a draw is the token whose CDF interval
//     holds the uniform, as on the host, up to rounding at an interval's
//     end. Stats.DevicePicks counts them.
//   - The Constraint seam: a per-sequence object that masks the logits of
//     tokens that cannot come next (constrained decoding plugs in here).
//
// Output reaches the caller through a Handle whose event buffer never
// blocks the scheduler: a slow client cannot stall the batch.
package engine
