package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/serve/adapters"
	"github.com/hone-rl/hone/serve/constrain"
	"github.com/hone-rl/hone/serve/engine"
	"github.com/hone-rl/hone/train/model"
)

// Server is hone-serve's HTTP front over one engine. Create it with
// NewServer; serve Handler; call Shutdown to drain.
type Server struct {
	o       Options
	m       *model.Model
	tok     *tokenizer.Tokenizer
	ptok    *tokenizer.Limited // tok for prompts: gives up at the context length
	cvocab  *constrain.Index   // tok read once for constrained decoding (fast masking)
	tmpl    *chattemplate.Template
	eng     *engine.Engine
	reg     *adapters.Registry // nil without --adapters
	name    string             // the base model's served name
	eos     []int32            // ids that end a sequence
	gen     genDefaults        // sampling defaults from generation_config.json (--generation-config)
	maxCtx  int
	created int64
	log     *slog.Logger
	met     *metrics

	toolsWarned   sync.Map // served model names already warned of tools their template lacks
	noTokenLogged sync.Map // "model code" of sequences with no token to choose already logged
	fieldsWarned  sync.Map // request fields this server ignores, already logged (at most maxWarnedFields)
	fieldsWarnedN atomic.Int64

	draining atomic.Bool
	active   atomic.Int64
	// replies holds the connection controls of the requests in flight
	// (track), so that Shutdown can cut short the reads and writes of
	// clients that stopped sending or reading once the drain timed out;
	// cut is then the deadline they all get.
	repliesMu sync.Mutex
	replies   map[*http.ResponseController]struct{}
	cut       time.Time
	// scoreSlot holds one prompt-scoring forward at a time (an echo with
	// logprobs); scoreWaiting counts the requests waiting for it, at most
	// Options.MaxQueue: requests here, not sequences, since a request's
	// prompt is scored once whatever its n.
	scoreSlot    chan struct{}
	scoreWaiting atomic.Int64

	// forceOutput, when set (tests), makes every generation follow the
	// returned tokens of its choice (then end of sequence) through the
	// Constraint seam.
	forceOutput func(prompt []int32, choice int) []int32
	// rendered, when set (tests), runs after a chat request's template is
	// rendered, given the request's context: a rendering that takes long,
	// as far as the deadline sees.
	rendered func(context.Context)
}

// NewServer loads the model folder and adapters of o onto o.Backend.
func NewServer(o Options) (*Server, error) {
	be := o.Backend
	if be == nil {
		return nil, errors.New("serve: no backend (Options.Backend)")
	}
	// Before WithDefaults, which takes a negative limit as 0. A negative
	// KVCacheBytes the engine would read as no limit: the opposite of
	// the limit a caller who set one meant.
	if err := o.checkLimits(); err != nil {
		return nil, err
	}
	o = o.WithDefaults()
	if o.Model == "" {
		return nil, errors.New("serve: no model folder given (--model)")
	}
	dt, err := model.ParseWeightDType(o.DType)
	if err != nil {
		return nil, fmt.Errorf("serve: --%w", err)
	}
	f, err := modelfolder.Open(o.Model, modelfolder.All)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	gcfg, gsrc, err := genConfigSource(o.GenerationConfig, f.Config.Generation)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	gen, err := loadGenDefaults(o.GenerationConfig, gcfg, gsrc)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if attrs := gen.logAttrs(); len(attrs) > 0 {
		// vLLM's warning, so that a change of sampling is not a surprise.
		o.Log.Warn("default sampling parameters have been overridden by "+gsrc+"; if this is not intended, restart hone-serve with --generation-config vllm", attrs...)
	}
	m, err := model.FromFolder(f, be, dt)
	_ = f.Close() // the model holds its own copy of the weights: unmap them now
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	for _, n := range f.Notes() {
		o.Log.Info(n)
	}
	tmpl, tok := f.Template, f.Tokenizer
	// A template that loops, recurses or crashes on a plain conversation
	// would fail every request: refuse to start instead.
	if err := tmpl.Check(context.Background()); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	// The folder's ids that end a turn, the ones train's layout ends a
	// trained turn at; under --generation-config <folder>, that folder's
	// (stopTokens).
	stops := stopTokens(o.GenerationConfig, gcfg, f)
	if dropped := droppedStops(f.StopTokens, stops); len(dropped) > 0 {
		// vLLM runs on past them without a word; the rows collected
		// would not end their turns where hone-train ends them.
		o.Log.Warn("replies do not stop on the model folder's eos ids that "+gsrc+" leaves out of its eos_token_id (as in vLLM, which reads that file instead); hone-train ends a trained turn at them: list them there to stop on them", "ids", dropped)
	}
	eos := make([]int32, len(stops))
	for i, id := range stops {
		eos[i] = int32(id)
	}
	s := &Server{
		o: o, m: m, tok: tok, tmpl: tmpl, name: o.ServedModelName, maxCtx: f.Config.MaxModelLen(), eos: eos, gen: gen,
		created: time.Now().Unix(), log: o.Log, met: newMetrics(), scoreSlot: make(chan struct{}, 1),
		replies: map[*http.ResponseController]struct{}{},
	}
	s.cvocab = constrain.NewIndex(tok)
	s.ptok = tok.Limited()
	if s.name == "" {
		s.name = baseName(o.Model)
	}
	if s.maxCtx <= 0 {
		s.maxCtx = 1 << 20
	}
	s.eng = engine.New(m, engine.Config{
		MaxBatch: o.MaxBatch, MaxQueue: o.MaxQueue, PrefillTokens: o.PrefillTokens, KVCacheBytes: o.KVCacheBytes,
		PrefixCaching: !o.DisablePrefixCaching, EOS: eos, Tokenizer: tok, Log: o.Log,
	})
	if o.Adapters != "" {
		s.reg = adapters.New(adapters.Options{Dir: o.Adapters, Config: &m.Config, MaxKeep: o.MaxAdapters, Log: o.Log, Backend: m.Backend(),
			ModelPath: o.Model, ModelName: s.name, Freed: s.eng.ForgetAdapter})
		s.reg.Poll(context.Background())
	}
	return s, nil
}

// Registry is the adapter registry (nil without --adapters).
func (s *Server) Registry() *adapters.Registry { return s.reg }

// Engine is the server's engine.
func (s *Server) Engine() *engine.Engine { return s.eng }

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	routes := []struct {
		method, path string
		h            http.Handler
	}{
		{"GET", "/health", http.HandlerFunc(s.health)},
		{"GET", "/metrics", http.HandlerFunc(s.metrics)},
		{"GET", "/v1/models", s.api("models", s.models)},
		{"POST", "/v1/chat/completions", s.api("chat", jsonHandler(s, s.chatRun))},
		{"POST", "/v1/completions", s.api("completions", jsonHandler(s, s.completionsRun))},
	}
	allowed := map[string]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, rt.h)
		allowed[rt.path] = rt.method
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The catch-all matches every method, so the mux's own 405 never
		// comes: a known path asked with another method gets it here, as
		// vLLM gives it.
		if m, ok := allowed[r.URL.Path]; ok {
			w.Header().Set("Allow", m)
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method "+r.Method+" is not allowed on "+r.URL.Path+"; use "+m, "", "")
			return
		}
		writeError(w, http.StatusNotFound, "not_found_error", "no route for "+r.Method+" "+r.URL.Path, "", "")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request's deadline (--request-timeout) runs from its arrival,
		// as the reads and writes track bounds do: every stage (rendering
		// the chat template, scoring the prompt, generating) spends from
		// it, where one deadline a stage let a request run for several.
		ctx, cancel := context.WithTimeout(r.Context(), s.o.RequestTimeout)
		defer cancel()
		defer s.track(w)()
		mux.ServeHTTP(w, r.WithContext(ctx))
	})
}

// statusWriter remembers the status for metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// api wraps an endpoint with authentication, the draining check, the body
// cap, in-flight accounting and metrics.
func (s *Server) api(endpoint string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() { s.met.request(endpoint, sw.status) }()
		if s.o.APIKey != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.o.APIKey)) != 1 {
				writeError(sw, http.StatusUnauthorized, "authentication_error", "missing or wrong API key (Authorization: Bearer …)", "", "invalid_api_key")
				return
			}
		}
		// Counted before the draining check, which Shutdown does the other
		// way round (draining, then the count): one of the two sees the
		// other, so no request passes the check after Shutdown saw none in
		// flight and closed the engine and the model.
		s.active.Add(1)
		defer s.active.Add(-1)
		if s.draining.Load() {
			writeHTTPError(sw, errShuttingDown())
			return
		}
		r.Body = http.MaxBytesReader(sw, r.Body, s.o.MaxBodyBytes)
		h(sw, r)
	})
}

// replyGrace is how long a request may still be read past its deadline,
// and then its answer written (the 504 itself must get out), or, once the
// drain timed out, past the engine's stop (the 503s of the requests it
// failed).
const replyGrace = time.Second

// track bounds the reading of the request (its body) and the writing of
// its answer on w, the server's own writer: a client that stops sending
// its body, or stops reading the answer, blocks a read or a write, without
// a deadline, for as long as the connection lives, holding the handler
// past the request deadline and a drain past its timeout. The read
// deadline comes replyGrace after the request's context ends (the write
// deadline replyGrace later: setDeadlines), so that a request past its
// deadline is a 504, not a cancellation (the server cancels the request's
// context when its connection's read fails). Every request sets its own
// deadlines, so those of an earlier one on a keep-alive connection never
// apply to it (and net/http clears the read deadline while the connection
// waits for the next request); they are not cleared when the handler
// returns, as the server still flushes the answer and reads what is left
// of the body after, which must stay bounded. The returned func, deferred, stops
// tracking the request.
func (s *Server) track(w http.ResponseWriter) func() {
	rc := http.NewResponseController(w)
	s.repliesMu.Lock()
	defer s.repliesMu.Unlock()
	deadline := time.Now().Add(s.o.RequestTimeout + replyGrace)
	if !s.cut.IsZero() {
		deadline = s.cut
	}
	// A writer without deadlines (no connection under it, in tests of
	// the handler alone) is left unbounded: nothing to cut there.
	setDeadlines(rc, deadline)
	s.replies[rc] = struct{}{}
	return func() {
		s.repliesMu.Lock()
		delete(s.replies, rc)
		s.repliesMu.Unlock()
	}
}

// setDeadlines bounds reading the request at t, and writing the answer
// replyGrace later, so that the 408 of a body that stopped coming at t
// can still be written.
func setDeadlines(rc *http.ResponseController, t time.Time) {
	_ = rc.SetReadDeadline(t)
	_ = rc.SetWriteDeadline(t.Add(replyGrace))
}

// cutReplies gives every request in flight replyGrace more to be read and
// answered: the drain timed out, and a client that stopped sending or
// reading must not hold the server past it.
func (s *Server) cutReplies() {
	s.repliesMu.Lock()
	defer s.repliesMu.Unlock()
	s.cut = time.Now().Add(replyGrace)
	for rc := range s.replies {
		setDeadlines(rc, s.cut)
	}
}

// Shutdown stops taking requests (503) and waits for those in flight, then
// stops the engine and frees the adapters' and the model's memory on the
// backend (the server must not be used afterwards). When ctx ends first,
// what still runs is failed, and the memory is left to the process's end.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	var err error
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.active.Load() > 0 && err == nil {
		select {
		case <-t.C:
		case <-ctx.Done():
			err = ctx.Err()
			// Said here, before they are failed: otherwise the process
			// ends "interrupted" with no word that requests were cut off.
			st := s.eng.Stats()
			s.log.Warn("drain timed out: failing the requests still in flight (503 shutting_down)",
				"in_flight", s.active.Load(), "running_sequences", st.Running, "queued", st.Queued, "err", err)
		}
	}
	// The engine's error when it has one: ctx's, or ErrStepStuck (which
	// wraps ctx's) saying a step stuck in the backend was given up on.
	if e := s.eng.Shutdown(ctx); e != nil {
		err = e
	}
	if err != nil {
		// After the engine stopped, which failed what still ran: their
		// 503s get replyGrace to be written, and a write blocked on a
		// client that stopped reading ends then.
		s.cutReplies()
	}
	if err == nil {
		// Nothing runs on the model any more: give the backend's memory
		// back (adapters, then the weights).
		if s.reg != nil {
			s.reg.Close()
		}
		s.m.Close()
	}
	return err
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeHTTPError(w, errShuttingDown())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"ok"}`+"\n")
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	// The base model's root is the folder it was loaded from, as vLLM's is
	// the --model it loaded.
	list := modelList{Object: "list", Data: []modelEntry{{ID: s.name, Object: "model", Created: s.created, OwnedBy: "hone", Root: s.o.Model, MaxModelLen: s.maxCtx}}}
	if s.reg != nil {
		// As vLLM lists a LoRA: its path is the root, the base model its
		// parent.
		for _, a := range s.reg.Served() {
			list.Data = append(list.Data, modelEntry{ID: a.Name, Object: "model", Created: s.created, OwnedBy: "hone", Root: a.Dir, Parent: s.name, MaxModelLen: s.maxCtx})
		}
	}
	writeJSON(w, http.StatusOK, list)
}

// jsonHandler decodes a request's JSON body into a fresh T and runs run
// on it; the error either gives is the reply (writeHTTPError).
func jsonHandler[T any](s *Server, run func(http.ResponseWriter, *http.Request, *T) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req T
		ignored, err := s.readJSON(r, &req)
		if err != nil {
			writeHTTPError(w, err)
			return
		}
		if len(ignored) > 0 {
			// As vLLM logs them: answered, but not as if they applied.
			w.Header().Add(WarningHeader, ignoredWarning(ignored))
			s.warnIgnored(ignored)
		}
		if err := run(w, r, &req); err != nil {
			writeHTTPError(w, err)
		}
	}
}

// The bounds on naming the fields a request carries that the server does
// not read: the names are the client's, any number and length within the
// body cap, and a header line past 64 kB fails Python's http.client
// (LineTooLong), while a name logged and remembered for the server's life
// is memory and log that a client sending new names grows without end.
const (
	maxListedFields = 8  // named in one response's WarningHeader
	maxWarnedFields = 64 // logged, once each, over the server's life
	maxFieldName    = 64 // bytes of a name shown
)

// ignoredWarning is the WarningHeader value for the ignored fields: the
// first maxListedFields, each clipped, and the count of them all.
func ignoredWarning(ignored []string) string {
	shown := make([]string, 0, min(len(ignored), maxListedFields))
	for _, f := range ignored[:min(len(ignored), maxListedFields)] {
		shown = append(shown, clip(headerSafe(f), maxFieldName))
	}
	msg := "fields ignored: " + strings.Join(shown, ", ")
	if len(ignored) > maxListedFields {
		msg += fmt.Sprintf(", … (%d in all)", len(ignored))
	}
	return msg
}

// headerSafe is the client's field name f with each control character
// (below U+0020, or DEL) as "?": a header value holding one is malformed,
// and HTTP clients (Go's, Python's h11) refuse the whole response for it.
func headerSafe(f string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, f)
}

// warnIgnored logs each ignored field once, until maxWarnedFields names
// were logged; then once that no more will be.
func (s *Server) warnIgnored(ignored []string) {
	for _, f := range ignored {
		f = clip(f, maxFieldName)
		if _, warned := s.fieldsWarned.Load(f); warned {
			continue
		}
		switch n := s.fieldsWarnedN.Add(1); {
		case n <= maxWarnedFields:
			if _, warned := s.fieldsWarned.LoadOrStore(f, true); !warned {
				s.log.Warn("requests carry a field this server does not read; it is ignored", "field", f)
			}
		case n == maxWarnedFields+1:
			s.log.Warn(fmt.Sprintf("requests carry more than %d fields this server does not read; further ones are not logged (the X-Hone-Warning header still names them)", maxWarnedFields))
		default:
			return
		}
	}
}

// holdModel maps a request's model name to a hold on its adapter (a nil
// Ref: the base model) and the name responses carry; a name the server
// does not serve is a 404 model_not_found. The caller releases the hold
// on every path that does not hand it to the engine (engine.Request.Done):
// see hold.
func (s *Server) holdModel(name string) (*hold, string, error) {
	if name == "" || name == s.name {
		return &hold{}, s.name, nil
	}
	if s.reg != nil {
		if a, err := s.reg.Resolve(name); err == nil {
			return &hold{ref: a}, a.Name(), nil
		}
	}
	return nil, "", &httpError{status: http.StatusNotFound, typ: "not_found_error", code: "model_not_found", param: "model",
		msg: s.unknownModel(name)}
}

// unknownModel is the 404's message for a name that resolves to nothing,
// in vLLM's words, with why where the registry can tell: a run it serves
// asked for at a step that is not loaded, or one not written as a plain
// number (as the folder step-000042 is, where the name is <run>@42).
func (s *Server) unknownModel(name string) string {
	msg := fmt.Sprintf("the model %q does not exist", name)
	want, err := runfolder.ParseServed(name) // Run is set even when the step is bad
	if s.reg == nil || !want.HasStep && err == nil {
		return msg
	}
	var loaded []string
	for _, n := range s.reg.Names() {
		if got, e := runfolder.ParseServed(n); e == nil && got.Run == want.Run {
			loaded = append(loaded, n)
		}
	}
	switch {
	case len(loaded) == 0:
		return msg
	case err != nil:
		return fmt.Sprintf("%s: steps are named by plain numbers, such as %s (loaded: %s)", msg, runfolder.ServedName(want.Run, 42), strings.Join(loaded, ", "))
	}
	return fmt.Sprintf("%s: step %d of run %q is not loaded (loaded: %s)", msg, want.Step, want.Run, strings.Join(loaded, ", "))
}

// hold is a handler's hold on its request's adapter (a nil Ref: the base
// model): release gives it up unless it was handed to the engine, so that
// a deferred release covers every early return.
type hold struct {
	ref    *adapters.Ref
	handed bool
}

// weights are the adapter's weights (nil: the base model).
func (h *hold) weights() *model.Adapter {
	if h.ref == nil {
		return nil
	}
	return h.ref.Weights
}

// handTo makes the engine release the hold once it retires req (or
// refuses it at Submit); the handler no longer does.
func (h *hold) handTo(req *engine.Request) {
	req.Adapter = h.weights()
	if h.ref != nil {
		req.Done = h.ref.Release
	}
	h.handed = true
}

// release gives the hold up unless the engine has it.
func (h *hold) release() {
	if !h.handed {
		h.ref.Release()
	}
}

// httpError is an error with its HTTP status and OpenAI error type.
type httpError struct {
	status     int
	typ        string
	code       string
	param      string
	msg        string
	retryAfter int // seconds, sent as Retry-After when positive
}

// Retry-After of the 429 and 503 answers, in seconds: a full queue frees
// a place within a decoding step or two, while a server shutting down is
// being restarted or replaced, which takes longer.
const (
	retryQueueFull = 1
	retryShutdown  = 5
)

func errShuttingDown() *httpError {
	return &httpError{status: http.StatusServiceUnavailable, typ: "service_unavailable", code: "shutting_down", msg: "server is shutting down", retryAfter: retryShutdown}
}

func (e *httpError) Error() string { return e.msg }

func badRequest(param, format string, args ...any) *httpError {
	return &httpError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, msg: fmt.Sprintf(format, args...)}
}

func writeHTTPError(w http.ResponseWriter, err error) {
	var he *httpError
	if errors.As(err, &he) {
		if he.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(he.retryAfter))
		}
		writeError(w, he.status, he.typ, he.msg, he.param, he.code)
		return
	}
	writeError(w, http.StatusInternalServerError, "server_error", err.Error(), "", "")
}

func writeError(w http.ResponseWriter, status int, typ, msg, param, code string) {
	e := apiError{Message: msg, Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = code
	}
	writeJSON(w, status, errorBody{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// submitError maps engine.Submit's errors to HTTP.
func submitError(err error) error {
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		msg := "the request queue is full; retry later"
		var qf *engine.QueueFullError
		if errors.As(err, &qf) {
			// The bound counts sequences: say so, since a client sending
			// large n is refused where one of n=1 would still get in.
			msg = fmt.Sprintf("the request queue is full: %d sequences are waiting for the batch, and this request's n=%d would make %d, over the server's --max-queue of %d sequences; retry later",
				qf.Waiting, qf.N, qf.Waiting+qf.N, qf.Max)
		}
		return &httpError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "queue_full", msg: msg, retryAfter: retryQueueFull}
	case errors.Is(err, engine.ErrClosed):
		return errShuttingDown()
	case errors.Is(err, engine.ErrTooLarge):
		return badRequest("", "%v", err)
	}
	return err
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func baseName(dir string) string {
	dir = strings.TrimRight(dir, "/")
	if i := strings.LastIndex(dir, "/"); i >= 0 {
		return dir[i+1:]
	}
	return dir
}
