package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// Errors Submit returns; the server maps them to HTTP statuses.
var (
	ErrQueueFull = errors.New("engine: request queue is full")
	ErrClosed    = errors.New("engine: shutting down")
	ErrTooLarge  = errors.New("engine: request does not fit")
)

// QueueFullError is Submit's refusal of a request whose N sequences would
// take the queue past Config.MaxQueue (errors.Is(err, ErrQueueFull)).
type QueueFullError struct {
	Waiting int // sequences already waiting
	N       int // the request's
	Max     int // Config.MaxQueue
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("%v: %d sequences waiting + n=%d is more than %d", ErrQueueFull, e.Waiting, e.N, e.Max)
}

// Is makes errors.Is(err, ErrQueueFull) hold.
func (e *QueueFullError) Is(target error) bool { return target == ErrQueueFull }

// ErrStepStuck is Shutdown's error when the step in progress did not
// return within Config.StopGrace after Shutdown's ctx ended: the engine's
// goroutine is left inside the backend, and the requests it held were
// ended with ErrClosed without it.
var ErrStepStuck = errors.New("engine: the step in progress did not end")

// ErrChoiceFailed ends the choices of a request still running when
// another of its choices failed (no candidate, a constraint's error).
var ErrChoiceFailed = errors.New("engine: another choice of the request failed")

// ErrNoCandidate ends a sequence whose logits row, once masked and
// penalised, holds no candidate token: every entry NaN or −Inf (a model
// whose numerics blew up, or a constraint that masked every token).
// kernels.RowChooser's rule says why the engine reports it rather than
// answer a fixed token.
var ErrNoCandidate = errors.New("engine: no token to choose: every logit is NaN or -Inf")

// NoCandidateError is the error of a sequence ended for want of a
// candidate (errors.Is(err, ErrNoCandidate)), with what the engine can tell
// of the cause at no cost to the steps that choose a token: Constrained
// when a constraint was in play and its mask left −Inf everywhere (it
// allowed no token, or the model gave −Inf to every token it allowed);
// otherwise the model's own logits had no candidate (NaN, or −Inf
// everywhere): its numerics blew up, as with a diverged adapter. A
// device's choice (kernels.RowChooser) never runs under a constraint, and
// tells NaN from −Inf no more than this does.
type NoCandidateError struct {
	Choice      int  // the sequence's choice index
	Tokens      int  // tokens it had generated before
	Constrained bool // the constraint's mask left no candidate
}

func (e *NoCandidateError) Error() string {
	why := "the model's logits"
	if e.Constrained {
		why = "the constraint's mask"
	}
	return fmt.Sprintf("%v (%s; choice %d after %d tokens)", ErrNoCandidate, why, e.Choice, e.Tokens)
}

// Is makes errors.Is(err, ErrNoCandidate) hold.
func (e *NoCandidateError) Is(target error) bool { return target == ErrNoCandidate }

// DefaultKeepBytes caps the kept rows of prefix caching when the KV cache
// has no budget: without one, nothing else would ever evict them.
const DefaultKeepBytes = 1 << 30

// Config sizes the engine.
type Config struct {
	MaxBatch     int   // sequences in the running batch (default 32)
	MaxQueue     int   // sequences (each request's N) waiting to join it (default 256); an empty queue takes any request
	KVCacheBytes int64 // budget of the KV cache in bytes (0: unlimited)
	// PrefillTokens caps the prompt tokens one step feeds, summed over the
	// sequences being prefilled (default 512; the first prompt in line
	// always gets some). A longer prompt, or a burst of new requests, is
	// prefilled over several steps, each also decoding one token of every
	// running sequence, so that new arrivals do not stall the batch for a
	// whole prefill.
	PrefillTokens int
	// PrefixCaching keeps the KV rows of finished sequences, and a prompt
	// that starts with the tokens of kept rows, or of a running sequence,
	// under the same adapter prefills only the rest (prefix.go, inFlight).
	// Kept rows live in the KV budget and give way to new sequences; with
	// no budget they are capped at DefaultKeepBytes.
	PrefixCaching bool
	EOS           []int32
	Tokenizer     *tokenizer.Tokenizer // decodes generated text (stop strings)
	Log           *slog.Logger
	// StopGrace is how long Shutdown, once its ctx ended, waits for the
	// step in progress to return before it gives up on it (default
	// DefaultStopGrace): a backend call that never returns (a wedged
	// device) must not hold the process's exit for ever.
	StopGrace time.Duration
}

// DefaultStopGrace is Config.StopGrace's default.
const DefaultStopGrace = 5 * time.Second

// Request is one generation request: N sequences continuing Prompt.
type Request struct {
	Ctx     context.Context // cancels the request (client gone, deadline)
	Prompt  []int32
	N       int
	Params  Params
	Adapter *model.Adapter // nil: the base model
	// Constraint, when set, makes one Constraint per sequence.
	Constraint func(choice int) Constraint
	// Done, when set, is called exactly once when the engine is finished
	// with the request: every sequence left the batch for good (finished,
	// cancelled, failed, or ended by Shutdown), or Submit refused it. No
	// step that includes a sequence of the request runs after it begins,
	// and the engine reads Adapter's weights no more, so Done may free
	// them (hone-serve releases its hold on the adapter here). It runs on
	// the engine's goroutine, or in Submit when that fails, and returns
	// before the request's last event is delivered; it must not block or
	// call into the engine.
	Done func()
}

// Event is what happened to one sequence (choice) of a request.
type Event struct {
	Choice int
	// Token is a generated token (-1 on the final event of a sequence that
	// carries no token), with its raw-model logprob and top alternatives
	// when Params.Logprobs.
	Token   int32
	Logprob float32
	Top     []TokenLogprob
	Text    string // text completed by this token (stop strings held back)
	Finish  string // "stop" or "length" on the sequence's last event
	Err     error  // the sequence failed (cancelled, deadline, model error)
}

// Handle is the caller's side of a submitted request.
type Handle struct {
	mu     sync.Mutex
	events []Event
	open   int // sequences not finished
	cached int // prompt tokens whose KV rows came from the prefix cache
	notify chan struct{}
	// abandoned is the engine's: closed when Shutdown gave up on a step
	// stuck in the backend, which would never deliver the rest.
	abandoned <-chan struct{}
}

// CachedTokens is the number of prompt tokens that were not prefilled
// because their KV rows came from the prefix cache (OpenAI's
// usage.prompt_tokens_details.cached_tokens). It is final once the request
// has started, so by its first event.
func (h *Handle) CachedTokens() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cached
}

func (h *Handle) push(ev Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	if ev.Finish != "" || ev.Err != nil {
		h.open--
	}
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

// Next waits for events. It returns done once every sequence has finished
// and all events were handed out; an error when ctx ends first, or one
// wrapping ErrClosed and ErrStepStuck when Shutdown gave up on the engine's
// step (the request will get no more events).
func (h *Handle) Next(ctx context.Context) (evs []Event, done bool, err error) {
	for {
		h.mu.Lock()
		evs, h.events = h.events, nil
		open := h.open
		h.mu.Unlock()
		if len(evs) > 0 || open == 0 {
			return evs, open == 0, nil
		}
		select {
		case <-h.notify:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-h.abandoned:
			return nil, false, fmt.Errorf("%w: %w", ErrClosed, ErrStepStuck)
		}
	}
}

// Stats are counters for /metrics.
type Stats struct {
	Running, Queued         int
	QueuedSequences         int // the queued requests' sequences, which Config.MaxQueue bounds
	PromptTokens, GenTokens int64
	Steps                   int64
	KVUsedBytes, KVBudget   int64
	RequestsDone, Cancelled int64
	// Prefix caching: prompt tokens looked up, those whose rows came from
	// the cache, and the bytes of rows kept.
	PrefixQueried, PrefixHit, PrefixKeptBytes int64
	StepSeconds                               float64
	// DevicePicks counts the tokens the backend chose where the logits
	// live (kernels.RowChooser: greedy and plain temperature sampling);
	// GenTokens less DevicePicks were chosen by the host's sampler.
	DevicePicks int64
}

type reqState struct {
	r         *Request
	h         *Handle
	seqs      []*sequence
	live      int
	retired   bool       // r.Done was called
	cancelled bool       // counted in Stats.Cancelled
	stops     *stopTable // r.Params.Stop's tables, built at Submit (nil: none)
}

// retire calls rs's Done hook, once.
func (rs *reqState) retire() {
	if rs.retired {
		return
	}
	rs.retired = true
	if rs.r.Done != nil {
		rs.r.Done()
	}
}

// refuse calls r's Done hook for a request Submit turns away.
func refuse(r *Request, err error) (*Handle, error) {
	if r.Done != nil {
		r.Done()
	}
	return nil, err
}

type sequence struct {
	id      int
	rs      *reqState
	choice  int
	pending []int32 // tokens to feed at the next step
	out     []int32 // tokens generated so far
	leader  bool    // prefills the prompt for its siblings
	waiting bool    // sibling waiting for the leader's prefill, or a leader for another's (await)
	// Prefix caching across requests in flight: a waiting leader starts
	// from the first awaitN rows of the leader whose deps it is in, once
	// that one's prompt is prefilled.
	awaitN int
	deps   []*sequence
	smp    *sampler
	cons   Constraint
	dec    *tokenizer.StreamDecoder
	text   strings.Builder // generated text so far (for stop strings)
	stops  *stopMatch      // where text stands in the stop strings (nil: none)
	sent   int             // bytes of text handed out
	done   bool
}

// Engine schedules requests onto the model. Create it with New; it is safe
// for concurrent use.
type Engine struct {
	m     *model.Model
	cfg   Config
	cache *KVCache
	eos   map[int32]bool
	log   *slog.Logger

	mu      sync.Mutex
	queue   []*reqState
	closing bool
	wake    chan struct{}
	stopped chan struct{}
	kill    chan struct{}
	killed  atomic.Bool
	// abandoned is closed (once, abandon) when Shutdown stops waiting for
	// a step stuck in the backend: every Handle's Next then fails.
	abandoned chan struct{}
	abandon   sync.Once

	// forgotten are adapters whose weights were freed (ForgetAdapter),
	// their kept prefix rows still to free on the engine's goroutine.
	// Their own lock: ForgetAdapter runs from Done hooks, which may run
	// under mu (Submit's refusals).
	forgetMu  sync.Mutex
	forgotten []*model.Adapter

	nextSeq int
	running []*sequence
	logits  []float32 // the last step's logits, reused by the next (step only)
	// chooser is the backend as a kernels.RowChooser, or nil: then the
	// logits are the host's (StepInto) and the host's sampler picks every
	// token. With one, the logits stay in the backend's memory (dlogits,
	// StepDevice) and only the rows the host's sampler needs are copied
	// into logits (host memory of the backend's when it is a
	// kernels.HostCopier: pinned says so).
	chooser kernels.RowChooser
	dlogits []float32
	pinned  bool

	promptTokens, genTokens, steps, reqDone, cancelled atomic.Int64
	prefixQueried, prefixHit                           atomic.Int64
	stepNanos                                          atomic.Int64
	nRunning, nQueued                                  atomic.Int64
	devicePicks                                        atomic.Int64
}

// New starts an engine over m.
func New(m *model.Model, cfg Config) *Engine {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 32
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 256
	}
	if cfg.PrefillTokens <= 0 {
		cfg.PrefillTokens = 512
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	e := &Engine{
		m: m, cfg: cfg, cache: NewKVCache(&m.Config, m.Backend(), cfg.KVCacheBytes), eos: map[int32]bool{}, log: cfg.Log,
		wake: make(chan struct{}, 1), stopped: make(chan struct{}), kill: make(chan struct{}),
		abandoned: make(chan struct{}),
	}
	e.chooser, _ = m.Backend().(kernels.RowChooser)
	for _, id := range cfg.EOS {
		e.eos[id] = true
	}
	if cfg.PrefixCaching {
		keep := cfg.KVCacheBytes
		if keep == 0 {
			keep = DefaultKeepBytes
		}
		e.cache.SetKeep(keep)
	}
	go e.loop()
	return e
}

// Model is the model the engine runs.
func (e *Engine) Model() *model.Model { return e.m }

// MaxBatch is the running-batch size.
func (e *Engine) MaxBatch() int { return e.cfg.MaxBatch }

// Stats returns the current counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	waiting := e.waitingLocked()
	e.mu.Unlock()
	return Stats{
		Running: int(e.nRunning.Load()), Queued: int(e.nQueued.Load()), QueuedSequences: waiting,
		PromptTokens: e.promptTokens.Load(), GenTokens: e.genTokens.Load(), Steps: e.steps.Load(),
		KVUsedBytes: e.cache.Used(), KVBudget: e.cache.Budget(),
		RequestsDone: e.reqDone.Load(), Cancelled: e.cancelled.Load(),
		StepSeconds:   float64(e.stepNanos.Load()) / 1e9,
		PrefixQueried: e.prefixQueried.Load(), PrefixHit: e.prefixHit.Load(), PrefixKeptBytes: e.cache.Kept(),
		DevicePicks: e.devicePicks.Load(),
	}
}

// MaxTokensFit is the largest max_tokens with which a request of n
// sequences over promptLen prompt tokens fits the KV cache budget (Check's
// bound), math.MaxInt without a budget; below 1 when not even the prompt
// fits. The server caps a request's default max_tokens with it: a client
// that leaves max_tokens out asked for no particular length, so it gets
// what the budget holds rather than a refusal.
func (e *Engine) MaxTokensFit(promptLen, n int) int {
	if e.cache.Budget() == 0 || n < 1 {
		return math.MaxInt
	}
	perSeq := e.cache.Budget() / e.cache.TokenBytes() / int64(n)
	return int(min(perSeq-int64(promptLen), math.MaxInt32))
}

// Check reports whether r could ever run, without queueing it.
func (e *Engine) Check(r *Request) error {
	switch {
	case len(r.Prompt) == 0:
		return fmt.Errorf("%w: empty prompt", ErrTooLarge)
	case r.N < 1:
		return fmt.Errorf("%w: n must be at least 1", ErrTooLarge)
	case r.N > e.cfg.MaxBatch:
		return fmt.Errorf("%w: n=%d is more than the batch size %d", ErrTooLarge, r.N, e.cfg.MaxBatch)
	case r.Params.MaxTokens < 0:
		return fmt.Errorf("%w: max_tokens must not be negative", ErrTooLarge)
	}
	V := e.m.Config.Vocab
	for _, id := range r.Prompt {
		if id < 0 || int(id) >= V {
			return fmt.Errorf("%w: token id %d outside the vocabulary [0, %d)", ErrTooLarge, id, V)
		}
	}
	// The sampler indexes the logits row with these.
	for id := range r.Params.LogitBias {
		if id < 0 || int(id) >= V {
			return fmt.Errorf("%w: logit_bias token id %d outside the vocabulary [0, %d)", ErrTooLarge, id, V)
		}
	}
	for _, id := range r.Params.StopIDs {
		if id < 0 || int(id) >= V {
			return fmt.Errorf("%w: stop token id %d outside the vocabulary [0, %d)", ErrTooLarge, id, V)
		}
	}
	// A sequence's positions are int32 (model.Step); past them the sums
	// below would overflow.
	if r.Params.MaxTokens > math.MaxInt32-len(r.Prompt) {
		return fmt.Errorf("%w: %d prompt tokens + max_tokens %d exceed the %d positions of a sequence",
			ErrTooLarge, len(r.Prompt), r.Params.MaxTokens, math.MaxInt32)
	}
	if need := int64(r.N) * int64(len(r.Prompt)+r.Params.MaxTokens); !e.cache.Fits(need) {
		return fmt.Errorf("%w: %d prompt tokens + %d max_tokens × n=%d need %d bytes of KV cache, the budget is %d",
			ErrTooLarge, len(r.Prompt), r.Params.MaxTokens, r.N, need*e.cache.TokenBytes(), e.cache.Budget())
	}
	return nil
}

// Submit queues r. It fails at once with ErrQueueFull, ErrClosed or an
// ErrTooLarge error (having called r.Done); otherwise the Handle delivers
// the output, and r.Done is called once the engine is finished with r.
func (e *Engine) Submit(r *Request) (*Handle, error) {
	if err := e.Check(r); err != nil {
		return refuse(r, err)
	}
	if r.Ctx == nil {
		r.Ctx = context.Background()
	}
	h := &Handle{open: r.N, notify: make(chan struct{}, 1), abandoned: e.abandoned}
	// Built here, on the caller's goroutine, not under the lock or on the
	// engine's: the tables are as long as the stop strings.
	stops := newStopTable(r.Params.Stop)
	e.mu.Lock()
	if err := e.queueRoomLocked(r.N); err != nil {
		e.mu.Unlock()
		return refuse(r, err)
	}
	e.queue = append(e.queue, &reqState{r: r, h: h, stops: stops})
	e.nQueued.Store(int64(len(e.queue)))
	e.mu.Unlock()
	// A cancelled request leaves the queue or batch at the next loop turn;
	// wake the loop so that an idle one notices too.
	context.AfterFunc(r.Ctx, e.poke)
	e.poke()
	return h, nil
}

// QueueRoom reports whether a request of n sequences would be queued now:
// nil, or the ErrClosed or QueueFullError Submit would answer. A caller
// with work to do before Submit (hone-serve's prompt scoring) asks first,
// so that overload is refused before that work, not after it.
func (e *Engine) QueueRoom(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queueRoomLocked(n)
}

// queueRoomLocked is QueueRoom with e.mu held. The bound counts
// sequences, not requests: a request's N sequences are N times the work
// ahead of the next one, and a bound on requests let a queue of requests
// of the batch's size hold MaxQueue batches. An empty queue takes a
// request of any N (within the batch, Check's), which would otherwise
// never run under a MaxQueue below it.
func (e *Engine) queueRoomLocked(n int) error {
	if e.closing {
		return ErrClosed
	}
	waiting := e.waitingLocked()
	if waiting > 0 && waiting+n > e.cfg.MaxQueue {
		return &QueueFullError{Waiting: waiting, N: n, Max: e.cfg.MaxQueue}
	}
	return nil
}

// waitingLocked is the number of sequences queued (e.mu held).
func (e *Engine) waitingLocked() int {
	waiting := 0
	for _, rs := range e.queue { // at most MaxQueue entries
		waiting += rs.r.N
	}
	return waiting
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// ForgetAdapter says adapter's weights were freed: no request will carry
// it again, so the prefix cache's rows computed with it are freed (on the
// engine's goroutine, at its next turn) rather than held until evicted. It
// does not block, so a Request.Done hook may call it.
func (e *Engine) ForgetAdapter(adapter *model.Adapter) {
	if adapter == nil {
		return
	}
	e.forgetMu.Lock()
	e.forgotten = append(e.forgotten, adapter)
	e.forgetMu.Unlock()
	e.poke()
}

// dropForgotten frees the kept rows of the adapters ForgetAdapter named.
func (e *Engine) dropForgotten() {
	e.forgetMu.Lock()
	gone := e.forgotten
	e.forgotten = nil
	e.forgetMu.Unlock()
	for _, a := range gone {
		// A free may be stuck on the device: once Shutdown gave up, no
		// more rows are freed, of this adapter or the next.
		e.cache.DropAdapter(a, e.gaveUp)
	}
}

// Shutdown stops accepting requests and waits until the running and queued
// ones finished. When ctx ends first, the rest are failed with ErrClosed.
// If the step in progress then does not return within Config.StopGrace (a
// backend call that hangs), Shutdown returns ErrStepStuck with ctx's error:
// the requests' Next fail with ErrClosed, their Done hooks are not called,
// and the engine's goroutine and memory are left to the process's end.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	e.poke()
	select {
	case <-e.stopped:
		return nil
	case <-ctx.Done():
		if e.killed.CompareAndSwap(false, true) {
			close(e.kill)
		}
		grace := time.NewTimer(e.cfg.StopGrace)
		defer grace.Stop()
		select {
		case <-e.stopped:
			return ctx.Err()
		case <-grace.C:
		}
		e.abandon.Do(func() { close(e.abandoned) })
		e.log.Error("engine step did not end after the drain: giving up on it and on the requests it held",
			"grace", e.cfg.StopGrace, "running_sequences", e.nRunning.Load(), "queued", e.nQueued.Load())
		return fmt.Errorf("%w within %v of the drain's end (%w)", ErrStepStuck, e.cfg.StopGrace, ctx.Err())
	}
}

func (e *Engine) loop() {
	defer close(e.stopped)
	for {
		select {
		case <-e.kill:
			if e.gaveUp() {
				// The step came back after Shutdown gave up on it: the
				// requests' Next already fail, and the caller was told
				// the memory is left to the process's end. A device still
				// wedged would hold a free for ever, and the goroutine with
				// it, so nothing more is asked of the backend (no cache
				// frees, no Done hooks that free adapters).
				return
			}
			e.failAll(ErrClosed)
			e.freeMemory()
			return
		default:
		}
		e.dropForgotten()
		e.reap()
		e.admit()
		if e.gaveUp() {
			// Shutdown gave up while one of these was stuck in the
			// backend: as above, nothing more is asked of it (an idle,
			// closing engine would free the cache next).
			return
		}
		if len(e.running) == 0 {
			e.mu.Lock()
			idle := len(e.queue) == 0
			closing := e.closing
			e.mu.Unlock()
			if idle && closing {
				e.freeMemory()
				return
			}
			select {
			case <-e.wake:
			case <-e.kill:
			case <-time.After(50 * time.Millisecond): // re-check deadlines of queued requests
			}
			continue
		}
		e.step()
	}
}

// freeMemory gives the cache's and the logits' memory back to the backend
// once every sequence has ended.
func (e *Engine) freeMemory() {
	e.cache.Close()
	e.freeLogits()
}

// gaveUp reports whether Shutdown gave up on the engine's step
// (ErrStepStuck).
func (e *Engine) gaveUp() bool {
	select {
	case <-e.abandoned:
		return true
	default:
		return false
	}
}

// failAll ends every queued and running request with err.
func (e *Engine) failAll(err error) {
	e.mu.Lock()
	q := e.queue
	e.queue = nil
	e.mu.Unlock()
	for _, rs := range q {
		rs.retire()
		for i := range rs.r.N {
			rs.h.push(Event{Choice: i, Token: -1, Err: err})
		}
	}
	for _, s := range e.running {
		e.finish(s, Event{Token: -1, Err: err})
	}
	e.running = nil
	e.nRunning.Store(0)
	e.nQueued.Store(0)
}

// reap drops cancelled requests, queued or running.
func (e *Engine) reap() {
	e.mu.Lock()
	q := e.queue[:0]
	var gone []*reqState
	for _, rs := range e.queue {
		if rs.r.Ctx.Err() != nil {
			gone = append(gone, rs)
		} else {
			q = append(q, rs)
		}
	}
	clear(e.queue[len(q):])
	e.queue = q
	e.nQueued.Store(int64(len(q)))
	e.mu.Unlock()
	// Each request ended may be stuck in the backend (its rows' free, a
	// Done hook freeing an adapter): once Shutdown gave up meanwhile, the
	// rest are left alone, as loop leaves everything once it gave up.
	for _, rs := range gone {
		if e.gaveUp() {
			return
		}
		e.cancelled.Add(1)
		rs.retire()
		for i := range rs.r.N {
			rs.h.push(Event{Choice: i, Token: -1, Err: context.Cause(rs.r.Ctx)})
		}
	}
	for _, s := range e.running {
		if e.gaveUp() {
			return
		}
		if !s.done && s.rs.r.Ctx.Err() != nil {
			if !s.rs.cancelled { // once a request, whichever choices still run
				s.rs.cancelled = true
				e.cancelled.Add(1)
			}
			e.finish(s, Event{Token: -1, Err: context.Cause(s.rs.r.Ctx)})
		}
	}
	e.compact()
}

func (e *Engine) compact() {
	e.running = slices.DeleteFunc(e.running, func(s *sequence) bool { return s.done })
	e.nRunning.Store(int64(len(e.running)))
}

// admit moves queued requests into the running batch, in arrival order,
// while the batch has room and their KV reservations fit.
func (e *Engine) admit() {
	for {
		// Shutdown may have given up while an admission was stuck in the
		// backend (a copy of prompt rows): the next ones would ask more of
		// it (copies, frees) and call Done hooks after it said it gave up.
		if e.gaveUp() {
			return
		}
		a, ok := e.dequeue()
		if !ok {
			return
		}
		e.start(a)
	}
}

// admission is a request dequeued with its KV reservations (ids, one a
// sequence) and where its prompt's rows may come from: kept rows (pm) or a
// running sequence (sh), looked up when lookup.
type admission struct {
	rs     *reqState
	ids    []int
	pm     PrefixMatch
	sh     share
	lookup bool
}

// dequeue takes the first queued request off the queue, its KV rows
// reserved, when the batch has room for its sequences and the reservations
// fit; otherwise it leaves the queue as it is (ok false) until running
// sequences end.
func (e *Engine) dequeue() (a admission, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		return a, false
	}
	rs := e.queue[0]
	r := rs.r
	if len(e.running)+r.N > e.cfg.MaxBatch {
		return a, false
	}
	tokens := len(r.Prompt) + r.Params.MaxTokens
	if r.Params.MaxTokens == 0 {
		tokens = len(r.Prompt) // nothing to generate; never stepped
	}
	// Matched before the reservations, which may evict kept rows: the
	// match is then the most recently used, so the last to go.
	a = admission{rs: rs, lookup: e.cfg.PrefixCaching && r.Params.MaxTokens > 0}
	if a.lookup {
		a.pm = e.cache.Match(r.Adapter, r.Prompt)
		a.sh = e.inFlight(r.Adapter, r.Prompt, a.pm.N)
	}
	if !e.cache.Room(int64(r.N) * int64(tokens)) {
		// Not before running sequences free memory; checked for all
		// n at once, so that a first reservation that fits does not
		// evict kept rows for a request that waits anyway.
		return a, false
	}
	if a.ids, ok = e.reserve(r.N, tokens); !ok {
		return a, false // wait for running sequences to free memory
	}
	e.queue = e.queue[1:]
	e.nQueued.Store(int64(len(e.queue)))
	return a, true
}

// reserve reserves tokens KV rows for each of n new sequences, all or
// none: on a failure the ones reserved are freed.
func (e *Engine) reserve(n, tokens int) ([]int, bool) {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = e.nextSeq
		e.nextSeq++
		if err := e.cache.Reserve(ids[i], tokens); err != nil {
			for _, id := range ids[:i] {
				e.cache.Free(id)
			}
			return nil, false
		}
	}
	return ids, true
}

// start puts a's sequences into the running batch: the leader's prompt
// rows seeded from the prefix cache where they can be, its siblings
// waiting for its prefill. A request with nothing to generate ends here.
func (e *Engine) start(a admission) {
	rs, r := a.rs, a.rs.r
	e.promptTokens.Add(int64(len(r.Prompt)))
	cached := e.seedPrefix(a)
	if a.lookup {
		e.prefixQueried.Add(int64(len(r.Prompt)))
		e.reused(rs, cached)
	}
	await, awaitN := (*sequence)(nil), 0
	if a.sh.wait {
		await, awaitN = a.sh.from, a.sh.n
	}
	rs.live = r.N
	for i, id := range a.ids {
		s := e.newSequence(rs, i, id)
		switch {
		case i == 0 && await != nil:
			s.leader, s.pending, s.waiting, s.awaitN = true, r.Prompt, true, awaitN
			await.deps = append(await.deps, s)
		case i == 0:
			s.leader, s.pending = true, r.Prompt[cached:]
		default:
			s.waiting = true
		}
		rs.seqs = append(rs.seqs, s)
	}
	if r.Params.MaxTokens == 0 {
		for _, s := range rs.seqs {
			e.finish(s, Event{Token: -1, Finish: "length"})
		}
		return
	}
	e.running = append(e.running, rs.seqs...)
	e.nRunning.Store(int64(len(e.running)))
}

// seedPrefix gives a's leader (a.ids[0]) the rows of its prompt that a
// running sequence already holds, or kept rows, and returns how many
// prompt tokens it need not prefill (0 when the copy fails: it prefills
// them all). A share to wait for is taken once its prefill is done
// (release).
func (e *Engine) seedPrefix(a admission) int {
	switch {
	case a.sh.from != nil && !a.sh.wait:
		if e.cache.Fork(a.ids[0], a.sh.from.id, a.sh.n) == nil {
			return a.sh.n
		}
	case a.sh.from == nil && a.pm.N > 0:
		if e.cache.Seed(a.ids[0], a.pm) == nil {
			return a.pm.N
		}
	}
	return 0
}

// newSequence makes choice i of rs, KV sequence id, with its sampler,
// stop-string matcher and constraint.
func (e *Engine) newSequence(rs *reqState, i, id int) *sequence {
	r := rs.r
	s := &sequence{id: id, rs: rs, choice: i, smp: newSampler(e.m.Backend(), r.Params, i), dec: e.cfg.Tokenizer.NewStreamDecoder(r.Params.SkipSpecial), stops: rs.stops.match()}
	if r.Params.MinTokens > 0 {
		s.smp.ban = e.endIDs(&r.Params)
	}
	if r.Params.repeats() {
		s.smp.seen = make(map[int32]bool, len(r.Prompt))
		for _, t := range r.Prompt {
			s.smp.seen[t] = true
		}
	}
	if r.Constraint != nil {
		s.cons = r.Constraint(i)
	}
	return s
}

// stepGroup is the sequences of one adapter that a step feeds, with the
// number of each one's pending tokens fed (one when decoding, up to the
// prefill budget of a prompt).
type stepGroup struct {
	ad   *model.Adapter
	seqs []*sequence
	feed []int
}

// step runs one model step per adapter over every sequence with pending
// tokens (prompts up to the PrefillTokens budget) and samples the next token
// of each whose prompt is fully fed, all such rows at once (pickAll).
func (e *Engine) step() {
	t0 := time.Now()
	// Counted as it starts: a caller woken by the step's last event sees
	// the step counted.
	e.steps.Add(1)
	for _, g := range e.stepGroups() {
		if !e.stepOne(g) {
			return
		}
	}
	e.stepNanos.Add(int64(time.Since(t0)))
	e.compact()
}

// stepGroups groups the running sequences that have tokens to feed by
// adapter, prompts within the PrefillTokens budget.
func (e *Engine) stepGroups() []*stepGroup {
	var groups []*stepGroup
	budget := e.cfg.PrefillTokens
	for _, s := range e.running {
		if s.done || s.waiting {
			continue
		}
		n := len(s.pending)
		if n > 1 { // a prompt (a decoding sequence feeds one token)
			if budget <= 0 {
				continue // the next step goes on
			}
			n = min(n, budget)
			budget -= n
		}
		var g *stepGroup
		for _, x := range groups {
			if x.ad == s.rs.r.Adapter {
				g = x
			}
		}
		if g == nil {
			g = &stepGroup{ad: s.rs.r.Adapter}
			groups = append(groups, g)
		}
		g.seqs = append(g.seqs, s)
		g.feed = append(g.feed, n)
	}
	return groups
}

// stepOne runs g's model call and picks the next token of each of its
// sequences whose prompt is fed. It reports false when Shutdown gave up on
// the step (ErrStepStuck) before the call, during it, during a copy of
// prompt rows or of logits to the host, or during the picks:
// then nothing more is asked of the backend, and no sequence is finished
// (which would call Done hooks and free rows), as loop leaves everything
// alone once it gave up; the requests' Next fail with ErrStepStuck.
func (e *Engine) stepOne(g *stepGroup) bool {
	if e.gaveUp() { // during an earlier group's picks or events
		return false
	}
	in := make([]model.StepInput, len(g.seqs))
	for i, s := range g.seqs {
		in[i] = model.StepInput{Seq: s.id, IDs: s.pending[:g.feed[i]]}
	}
	// The logits buffer is reused step after step: nothing keeps a row
	// past this group's picks (a forked sequence gets a copy).
	var logits []float32
	var err error
	if e.chooser != nil {
		logits, err = e.m.StepDevice(context.Background(), e.cache, in, g.ad, e.dlogits)
	} else {
		logits, err = e.m.StepInto(context.Background(), e.cache, in, g.ad, e.logits)
	}
	if e.gaveUp() {
		return false
	}
	if err != nil {
		e.log.Error("model step failed", "sequences", len(in), "err", err)
		for _, s := range g.seqs {
			for _, t := range s.rs.seqs {
				e.finish(t, Event{Token: -1, Err: fmt.Errorf("model step: %w", err)})
			}
		}
		return true
	}
	jobs := e.fedJobs(g)
	if e.gaveUp() { // during a copy of prompt rows (fedJobs)
		return false
	}
	V := e.m.Config.Vocab
	if e.chooser != nil {
		e.dlogits = logits
		if !e.chooseOnDevice(jobs, logits, V) {
			return false
		}
	} else {
		e.logits = logits
		for k := range jobs {
			jobs[k].setRow(logits, V)
		}
	}
	pickAll(jobs)
	if e.gaveUp() { // the picks were stuck: their tokens go nowhere
		return false
	}
	for _, j := range jobs {
		e.emit(j.s, j.pick)
	}
	return true
}

// fedJobs advances g's sequences past the tokens fed and returns the picks
// due: one for each sequence whose prompt is now fed, and for a leader's
// siblings, which start from a copy of its rows. Leaders waiting for a
// prefilled prompt are let go. Each copy may be stuck in the backend: once
// Shutdown gave up meanwhile, it copies no more (the caller checks).
func (e *Engine) fedJobs(g *stepGroup) []pickJob {
	var jobs []pickJob
	for i, s := range g.seqs {
		if s.pending = s.pending[g.feed[i]:]; len(s.pending) > 0 {
			continue // more of the prompt next step; these logits are not needed
		}
		for _, d := range s.deps {
			if e.gaveUp() {
				return nil
			}
			e.release(d, s)
		}
		s.deps = nil
		if s.leader {
			s.leader = false
			for _, t := range s.rs.seqs[1:] {
				if t.done {
					continue
				}
				if e.gaveUp() {
					return nil
				}
				if err := e.cache.Fork(t.id, s.id, len(s.rs.r.Prompt)); err != nil {
					e.finish(t, Event{Token: -1, Err: err})
					continue
				}
				t.waiting = false
				jobs = append(jobs, pickJob{s: t, at: i, fork: true})
			}
		}
		jobs = append(jobs, pickJob{s: s, at: i})
	}
	return jobs
}

// pickJob is one sequence's sampling work of a step: its logits row (at,
// in the step's logits; which the pick may modify), and the result, which
// the backend gave when chosen (then row is nil).
type pickJob struct {
	s      *sequence
	at     int
	fork   bool // a sibling's first token from its leader's row: a copy of its own
	row    []float32
	pick   picked
	chosen bool
}

// setRow points j at its row of logits (host memory), copied when j is a
// fork (the leader's pick may modify the row).
func (j *pickJob) setRow(logits []float32, V int) {
	j.row = logits[j.at*V : (j.at+1)*V]
	if j.fork {
		j.row = slices.Clone(j.row)
	}
}

// chooseOnDevice makes the step's choices that the backend can make where
// the logits live (the sampler's deviceInv: greedy and plain temperature
// sampling, nothing else asked for), in one ChooseRows, so that a few
// values a choice cross to the host; and copies to the host only the rows
// of the other jobs, for the host's sampler (pickAll). logits [S, V] are
// the backend's memory (StepDevice). It reports false when Shutdown gave
// up on the step during a copy: then it asks the backend nothing more.
func (e *Engine) chooseOnDevice(jobs []pickJob, logits []float32, V int) bool {
	var dev []int // the jobs chosen on the device
	var rows []int32
	var inv []float32
	var u []float64
	need := make([]bool, len(logits)/V) // rows the host's sampler reads
	host := false
	for k := range jobs {
		j := &jobs[k]
		if j.s.done {
			continue
		}
		it, ok := j.s.smp.deviceInv(j.s.cons, V)
		if !ok {
			need[j.at], host = true, true
			continue
		}
		dev = append(dev, k)
		rows, inv, u = append(rows, int32(j.at)), append(inv, it), append(u, j.s.smp.deviceU(it))
	}
	if host {
		buf := e.hostLogits(len(logits))
		be := e.m.Backend()
		// Runs of consecutive rows in one copy each.
		for lo := 0; lo < len(need); {
			if !need[lo] {
				lo++
				continue
			}
			hi := lo
			for hi < len(need) && need[hi] {
				hi++
			}
			kernels.CopyToHost(be, buf[lo*V:hi*V], logits[lo*V:hi*V], (hi-lo)*V)
			if e.gaveUp() { // the copy was stuck on the device
				return false
			}
			lo = hi
		}
		for k := range jobs {
			if j := &jobs[k]; !j.s.done && need[j.at] {
				j.setRow(buf, V)
			}
		}
	}
	if len(dev) == 0 {
		return true
	}
	res := make([]kernels.RowChoice, len(dev))
	e.chooser.ChooseRows(res, logits, V, rows, inv, u)
	for n, k := range dev {
		j := &jobs[k]
		j.pick, j.chosen, j.row = j.s.smp.fromDevice(res[n]), true, nil
	}
	e.devicePicks.Add(int64(len(dev)))
	return true
}

// hostLogits returns n values of host memory for the rows the host's
// sampler reads when the logits stay on the backend (e.logits, grown when
// short): the backend's own when it is a kernels.HostCopier (page-locked on
// kernels/cuda, which CopyToHost fills by DMA), else Go memory.
func (e *Engine) hostLogits(n int) []float32 {
	if cap(e.logits) >= n {
		return e.logits[:n]
	}
	e.freeHost()
	if h, ok := e.m.Backend().(kernels.HostCopier); ok {
		if buf, err := h.AllocHostF32(n); err == nil {
			e.logits, e.pinned = buf, true
			return buf
		}
		// Go memory does too, at the driver's staging speed.
	}
	e.logits, e.pinned = make([]float32, n), false
	return e.logits
}

// freeHost frees hostLogits' memory.
func (e *Engine) freeHost() {
	if e.pinned {
		e.m.Backend().(kernels.HostCopier).FreeHostF32(e.logits[:cap(e.logits)])
	}
	e.logits, e.pinned = nil, false
}

// freeLogits gives the step's logits back: the device's and the host's
// (with a RowChooser), or StepInto's.
func (e *Engine) freeLogits() {
	if e.chooser == nil {
		e.m.FreeLogits(e.logits)
		e.logits = nil
		return
	}
	e.m.FreeDeviceLogits(e.dlogits)
	e.dlogits = nil
	e.freeHost()
}

type picked struct {
	id  int32
	lp  float32
	top []TokenLogprob
	// constrained: id is −1 and a constraint's mask left no candidate
	// (NoCandidateError.Constrained).
	constrained bool
}

// pickMinWork is the number of logits below which pickAll samples on the
// calling goroutine: under it, starting goroutines costs more than it saves.
const pickMinWork = 1 << 16

// pickAll samples every job's next token, spread over GOMAXPROCS
// goroutines. Each job touches only its own sequence's sampler and
// constraint, so the jobs are independent; on the 0.5B shape (151,936
// logits a row) sampling 32 rows on one core costs a sizeable part of a
// decode step.
func pickAll(jobs []pickJob) {
	work := 0
	for _, j := range jobs {
		work += len(j.row) // 0 for the jobs the backend chose
	}
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	if workers <= 1 || work < pickMinWork {
		for i := range jobs {
			jobs[i].pickOne()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
				jobs[i].pickOne()
			}
		}()
	}
	wg.Wait()
}

func (j *pickJob) pickOne() {
	if j.s.done || j.chosen {
		return
	}
	j.pick.id, j.pick.lp, j.pick.top = j.s.smp.pick(j.row, j.s.cons)
	if j.pick.id < 0 && j.s.cons != nil {
		// pick masks the row in place, and choose writes nothing to a row
		// in which it finds no candidate: a NaN left there is a token the
		// constraint allowed and the model gave NaN, the model's fault;
		// −Inf everywhere is the constraint's (it allowed nothing the
		// model could choose). Scanned only on this rare path.
		j.pick.constrained = !slices.ContainsFunc(j.row, func(v float32) bool { return v != v })
	}
}

// endIDs are the token ids p.MinTokens holds back: the model's
// end-of-sequence ids and p.StopIDs. The end-of-sequence ids are held back
// under p.IgnoreEOS too, as vLLM's min_tokens bans them (its
// all_stop_token_ids hold them whatever ignore_eos): a client of either
// server gets no EOS among the first min_tokens tokens. An end-of-sequence
// id past the model's vocabulary (a tokenizer's eos_token added without
// growing the embedding) is left out: no logits row holds it, so the model
// cannot choose it, and holding it back would index past the row.
func (e *Engine) endIDs(p *Params) []int32 {
	ids := slices.Clone(p.StopIDs)
	for id := range e.eos {
		if int(id) < e.m.Config.Vocab {
			ids = append(ids, id)
		}
	}
	return ids
}

// emit records the token picked for s and reports it.
func (e *Engine) emit(s *sequence, pk picked) {
	if s.done {
		return
	}
	p := &s.rs.r.Params
	id, lp, top := pk.id, pk.lp, pk.top
	if id < 0 {
		e.fail(s, &NoCandidateError{Choice: s.choice, Tokens: len(s.out), Constrained: pk.constrained})
		return
	}
	if s.cons != nil {
		if err := s.cons.Accept(id); err != nil {
			e.fail(s, fmt.Errorf("constraint: %w", err))
			return
		}
	}
	s.out = append(s.out, id)
	e.genTokens.Add(1)
	ev := Event{Choice: s.choice, Token: id, Logprob: lp, Top: top}
	stop := (e.eos[id] && !p.IgnoreEOS) || slices.Contains(p.StopIDs, id)
	fed := s.text.Len()
	if !stop || p.IncludeStop {
		s.text.WriteString(s.dec.Add(int(id)))
	}
	all := s.text.String()
	byString := false
	if !stop && s.stops != nil {
		// A stop string may end in this token's text: only its bytes are
		// fed, so a token costs the same whatever the stop strings' length.
		// A stop token's text, kept by IncludeStop, is not searched: vLLM's
		// detokenizer returns before its stop-string check when a stop
		// token ended the sequence, so the text ends with the token's whole.
		if len(s.out) <= p.MinTokens {
			// No stop string ends within the first min_tokens tokens'
			// text (vLLM's rule); one may begin there and end later.
			s.stops.quiet = len(all)
		}
		if cut := s.stops.feed(all[fed:], fed); cut >= 0 {
			if p.IncludeStop {
				cut += s.stops.matched
			}
			stop, byString = true, true
			all = all[:max(cut, s.sent)]
		}
	}
	switch {
	case byString:
		ev.Text, ev.Finish = all[s.sent:], "stop" // cut at (or after) a stop string
	case stop:
		ev.Text, ev.Finish = all[s.sent:]+s.dec.Flush(), "stop"
	case len(s.out) >= p.MaxTokens:
		ev.Text, ev.Finish = all[s.sent:]+s.dec.Flush(), "length"
	default:
		// Hold back a tail that could still become a stop string, unless
		// the stop string is to be sent anyway (as vLLM holds it).
		end := len(all)
		if !p.IncludeStop {
			end -= s.stops.hold()
		}
		if end > s.sent {
			ev.Text = all[s.sent:end]
			s.sent = end
		}
		s.pending = []int32{id}
		s.rs.h.push(ev)
		return
	}
	e.finish(s, ev)
}

// inFlightMin is the fewest prompt tokens a request waits for another's
// prefill to share: below it, prefilling them alongside costs less than
// the wait.
const inFlightMin = 16

// share is where a new request's leader can take rows from a running
// sequence: the first n rows of from, now, or once from's prompt is
// prefilled (wait).
type share struct {
	from *sequence
	n    int
	wait bool
}

// inFlight finds the running sequence, under adapter, whose rows share the
// most tokens with prompt, more than better (the kept rows' match) and at
// most len(prompt)−1: rows already computed are copied at once; a leader
// still prefilling a prompt that shares at least inFlightMin tokens is
// waited for. Requests that arrive together with the same beginning (a
// GRPO group's episodes, each its own request) then prefill it once, and
// one that arrives while another with its beginning is decoding copies
// that one's rows.
func (e *Engine) inFlight(adapter *model.Adapter, prompt []int32, better int) share {
	if len(prompt) < 2 {
		return share{}
	}
	want := prompt[:len(prompt)-1]
	var now, later share
	for _, s := range e.running {
		if s.done || s.waiting || s.rs.r.Adapter != adapter {
			continue
		}
		p := s.rs.r.Prompt
		if s.leader && len(s.pending) > 0 {
			if n := commonPrefix(p, want); n > later.n {
				later = share{from: s, n: n, wait: true}
			}
			continue
		}
		// Decoding: its rows hold the prompt and the generated tokens fed
		// (all but the last one sampled).
		rows := e.cache.Len(s.id)
		n := commonPrefix(p, want)
		if n == len(p) && rows > len(p) {
			n += commonPrefix(s.out[:min(rows-len(p), len(s.out))], want[len(p):])
		}
		if n = min(n, rows); n > now.n {
			now = share{from: s, n: n}
		}
	}
	switch {
	case now.n > better && now.n >= later.n:
		return now
	case later.n > better && later.n >= inFlightMin:
		return later
	}
	return share{}
}

// release lets leader d, which waited for from's prefill, start: with
// from's first d.awaitN rows, or from nothing when from is nil (it ended
// first) or the copy fails.
func (e *Engine) release(d, from *sequence) {
	d.waiting = false
	if d.done || from == nil {
		return
	}
	if err := e.cache.Fork(d.id, from.id, d.awaitN); err != nil {
		e.log.Warn("prefix cache: copy from a request in flight failed; prefilling the whole prompt", "err", err)
		return
	}
	d.pending = d.rs.r.Prompt[d.awaitN:]
	e.reused(d.rs, d.awaitN)
}

// reused records that n prompt tokens of rs came from the prefix cache.
func (e *Engine) reused(rs *reqState, n int) {
	if n == 0 {
		return
	}
	e.prefixHit.Add(int64(n))
	rs.h.mu.Lock()
	rs.h.cached = n
	rs.h.mu.Unlock()
}

// fail ends s with err, and the request's other choices still running
// with ErrChoiceFailed: one failed choice fails the request (the reply is
// its error), so their tokens would be generated for nothing. They end
// here, in this step, not when the caller's cancel reaches the engine a
// loop turn or many later (on a busy machine, hundreds of tokens).
func (e *Engine) fail(s *sequence, err error) {
	e.finish(s, Event{Token: -1, Err: err})
	for _, o := range s.rs.seqs {
		if !o.done {
			e.finish(o, Event{Token: -1, Err: fmt.Errorf("%w (choice %d)", ErrChoiceFailed, s.choice)})
		}
	}
}

// finish ends s with its last event and frees its cache rows, or keeps
// them for prefix caching when s ended normally.
func (e *Engine) finish(s *sequence, ev Event) {
	if s.done {
		return
	}
	if e.gaveUp() {
		// Shutdown gave up while an earlier free was stuck on the device
		// (another choice ended in the same step, say): s's rows are not
		// freed on a backend that may be wedged, nor its Done hook called,
		// as loop leaves everything once it gave up.
		return
	}
	s.done = true
	ev.Choice = s.choice
	for _, d := range s.deps {
		e.release(d, nil) // s ends before its prompt's rows exist
	}
	s.deps = nil
	if e.cfg.PrefixCaching && ev.Err == nil {
		e.cache.Keep(s.id, s.rs.r.Adapter, append(slices.Clip(s.rs.r.Prompt), s.out...))
	} else {
		e.cache.Free(s.id)
	}
	if e.gaveUp() {
		// The free was stuck on the device: the request's Done hook (which
		// may free an adapter there) and last event are left alone, as
		// everything is once Shutdown gave up; its Next fails with
		// ErrStepStuck.
		return
	}
	s.rs.live--
	if s.rs.live == 0 {
		e.reqDone.Add(1)
		// finish runs on the engine's goroutine between steps, or after
		// the step of s's group returned: no step including the request
		// runs now or later.
		s.rs.retire()
	}
	s.rs.h.push(ev)
}
