package vllm

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/urlmask"
)

// Options configure a Front.
type Options struct {
	Upstream     string        // vLLM's base URL, e.g. http://127.0.0.1:8001 (a trailing /v1 is dropped)
	UpstreamKey  string        // bearer token vLLM expects (its --api-key); empty: none sent
	AdaptersDir  string        // DIR/<run>/step-N/ as hone-train writes it; empty: no adapters
	KeepAdapters int           // versions kept loaded in vLLM per run (0: 2; negative: an error)
	Client       *http.Client  // for the LoRA calls and the proxied requests (default: a plain client)
	APIKey       string        // clients must send "Authorization: Bearer <key>" on /v1 routes when set
	MaxBodyBytes int64         // request body cap, 413 beyond (0: 8 MiB; negative: an error)
	Log          *slog.Logger  // default: discard
	Interval     time.Duration // Watch's poll interval (0: 2s; negative: an error)
	// CallTimeout bounds one LoRA load or unload call (0: 2 min;
	// negative: an error): a vLLM that takes the call and never answers
	// fails it, to be tried again at the next Sync, rather than holding
	// every run's syncing.
	CallTimeout time.Duration
}

// Front forwards requests to vLLM and keeps vLLM's LoRA adapters in step
// with the adapters folder. Create it with NewFront; it is an http.Handler.
type Front struct {
	o     Options
	base  *url.URL
	proxy *httputil.ReverseProxy

	syncMu sync.Mutex // one Sync at a time
	// reported holds, per condition ("" for the adapters folder, else the
	// run, or "<run>/load" for a load vLLM did not answer), the error Sync last returned for it, so a lasting one is
	// returned (and logged by Watch) once. Guarded by syncMu.
	reported map[string]string

	mu   sync.RWMutex
	runs map[string]*runState
	// gone holds the loaded versions vLLM answered a request for with
	// "does not exist" (it restarted since their load): the next Sync
	// forgets them, so that it loads the current one again. Guarded by mu.
	gone map[string]bool
	// inUse counts, per loaded "<run>@<step>", the requests sent to it
	// that have not ended: unloadOld keeps such a version loaded (vLLM
	// would answer a request still on its way "does not exist"), and a
	// later Sync unloads it. Guarded by mu.
	inUse map[string]int

	draining atomic.Bool // Serve is stopping: new requests get 503
}

// runState is what vLLM holds of one run.
type runState struct {
	current int               // step "<run>" maps to; -1 before the first load
	loaded  []int             // steps loaded in vLLM, least recently current first
	failed  map[int]time.Time // step → folder stamp when its load failed
	path    map[int]string    // step → folder given to vLLM
	// stamp is each loaded step's folder stamp when vLLM read it: a step
	// folder written again since (a redone run) is loaded again.
	stamp map[int]time.Time
	// runDir is, per loaded step, the run folder it was read from (absent
	// where that could not be read): a run folder found another since
	// (deleted and made anew; hone-serve's copy of a run published anew,
	// swapped in) holds another run's steps under the same names
	// (dropReplacedRun).
	runDir map[int]runfolder.FolderID
	// stale holds the steps vLLM still holds from a folder written again
	// since, taken out of loaded (no request resolves to them) but not yet
	// unloaded, as requests sent to them have not ended (dropReplaced).
	stale map[int]bool
	// gone counts the Syncs in a row that found the run folder gone
	// (dropGoneRuns): one is not enough, as a run folder swapped in by
	// two renames (runfolder's fallback where the file system cannot
	// exchange two folders) is missing for a moment between them.
	gone int
}

// withDefaults is o with its unset settings at their defaults. A negative
// limit is an error naming it: the default in its place would be a limit
// the caller did not ask for.
func withDefaults(o Options) (Options, error) {
	for _, l := range []struct {
		field, want, def string
		neg              bool
		val              any
	}{
		{"KeepAdapters", "a version count", "2", o.KeepAdapters < 0, o.KeepAdapters},
		{"MaxBodyBytes", "a byte count", "8 MiB", o.MaxBodyBytes < 0, o.MaxBodyBytes},
		{"Interval", "a duration", "2s", o.Interval < 0, o.Interval},
		{"CallTimeout", "a duration", "2 min", o.CallTimeout < 0, o.CallTimeout},
	} {
		if l.neg {
			return o, fmt.Errorf("vllm: %s %v: want %s, or 0 for the default (%s)", l.field, l.val, l.want, l.def)
		}
	}
	if o.KeepAdapters == 0 {
		o.KeepAdapters = 2
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Interval == 0 {
		o.Interval = 2 * time.Second
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 2 * time.Minute
	}
	return o, nil
}

// NewFront checks o and returns the front.
func NewFront(o Options) (*Front, error) {
	if o.Upstream == "" {
		return nil, errors.New("vllm: no upstream URL")
	}
	u, err := url.Parse(strings.TrimRight(o.Upstream, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("vllm: upstream %q: want http(s)://host:port", urlmask.Shown(o.Upstream))
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	if o, err = withDefaults(o); err != nil {
		return nil, err
	}
	f := &Front{o: o, base: u, runs: map[string]*runState{}}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// ServeHTTP forwards only a request whose escaped path is
			// exactly a route, so the joined path is base + that route.
			// The query is dropped: none of the routes reads one.
			pr.SetURL(f.base)
			pr.Out.URL.RawQuery = ""
			// vLLM's GET routes are FastAPI's, which answer HEAD with 405:
			// a HEAD goes to vLLM as GET, and the server sends the client
			// its headers without the body.
			if pr.In.Method == http.MethodHead {
				pr.Out.Method = http.MethodGet
			}
			pr.Out.Header.Del("Authorization")
			// The client's key is ours, never vLLM's; vLLM's key goes only
			// with the routes our key guards, never with the open ones.
			if rt, _ := lookupRoute(pr.In.URL.Path); !rt.open && o.UpstreamKey != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+o.UpstreamKey)
			}
		},
		Transport:      o.Client.Transport,
		FlushInterval:  -1, // SSE: every write reaches the client at once
		ModifyResponse: f.modifyResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client left
			}
			f.o.Log.Warn("vllm: upstream request failed", "path", r.URL.Path, "err", err)
			writeError(w, http.StatusBadGateway, "upstream_error", "the vLLM upstream did not answer: "+err.Error(), "", "")
		},
	}
	if f.proxy.Transport == nil {
		f.proxy.Transport = http.DefaultTransport
	}
	return f, nil
}

// Model maps a request's model name to the name sent to vLLM: "<run>" to
// the run's current "<run>@<step>"; a "<run>@<step>" of a known run must be
// loaded and spelled as hone-serve spells it (ok false otherwise: "r@05" is
// not "r@5"); anything else, a name of vLLM's own, passes unchanged.
func (f *Front) Model(name string) (string, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.modelLocked(name)
}

// use is Model for a request about to be sent: a loaded version it maps
// to is counted in inUse, under the same lock as the lookup so that no
// unload comes between, until release (idempotent) is called once the
// request ended.
func (f *Front) use(name string) (to string, ok bool, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	to, ok = f.modelLocked(name)
	v, err := runfolder.ParseServed(to)
	if rs := f.runs[v.Run]; !ok || err != nil || !v.HasStep || rs == nil || !slices.Contains(rs.loaded, v.Step) {
		return to, ok, func() {}
	}
	if f.inUse == nil {
		f.inUse = map[string]int{}
	}
	f.inUse[to]++
	return to, ok, sync.OnceFunc(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.inUse[to]--; f.inUse[to] <= 0 {
			delete(f.inUse, to)
		}
	})
}

// modelLocked is Model, called under mu.
func (f *Front) modelLocked(name string) (string, bool) {
	want, err := runfolder.ParseServed(name)
	rs := f.runs[want.Run]
	switch {
	case rs == nil:
		return name, true
	case err != nil:
		return name, false
	case !want.HasStep:
		if rs.current >= 0 {
			return runfolder.ServedName(want.Run, rs.current), true
		}
		return name, true
	case slices.Contains(rs.loaded, want.Step):
		return name, true
	}
	return name, false
}

// Loaded returns the versioned names loaded in vLLM, by run then step.
func (f *Front) Loaded() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []string
	for _, run := range sortedKeys(f.runs) {
		for _, s := range slices.Sorted(slices.Values(f.runs[run].loaded)) {
			out = append(out, runfolder.ServedName(run, s))
		}
	}
	return out
}

// route is one path of the front's allow-list.
type route struct {
	method string // GET routes take HEAD too
	open   bool   // no key: health checks and Prometheus scrapes
}

// lookupRoute is the front's allow-list: what an OpenAI client and a
// monitor of the front need. Nothing else reaches vLLM: its adapter
// management (the front alone loads and unloads adapters), /sleep,
// /wake_up, /reset_prefix_cache, /invocations, /tokenize and the rest
// change the server's state or are not part of the OpenAI API.
func lookupRoute(p string) (route, bool) {
	switch p {
	case "/v1/chat/completions", "/v1/completions":
		return route{method: http.MethodPost}, true
	case "/v1/models":
		return route{method: http.MethodGet}, true
	case "/health", "/metrics":
		return route{method: http.MethodGet, open: true}, true
	}
	return route{}, false
}

// ServeHTTP answers what is not on the allow-list with 404, checks the key
// and the body, rewrites the model name and forwards the request to vLLM.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "server is shutting down", "", "shutting_down")
		return
	}
	// The path as sent must be a route byte for byte: a doubled slash, a
	// dot segment, a trailing slash or a percent-escape is no route, so
	// that the path checked here is the path vLLM receives.
	p := r.URL.EscapedPath()
	rt, ok := lookupRoute(p)
	if !ok || r.URL.Opaque != "" {
		f.notFound(w, r)
		return
	}
	if !rt.open && !f.authorized(r) {
		writeError(w, http.StatusUnauthorized, "authentication_error", "missing or wrong API key (Authorization: Bearer …)", "", "invalid_api_key")
		return
	}
	if r.Method != rt.method && (rt.method != http.MethodGet || r.Method != http.MethodHead) {
		w.Header().Set("Allow", rt.method)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("%s takes %s, not %s", p, rt.method, r.Method), "", "method_not_allowed")
		return
	}
	if rt.method == http.MethodGet {
		// Read-only routes forward no body.
		if r.Body != nil {
			r.Body.Close()
		}
		r.Body, r.ContentLength, r.TransferEncoding = http.NoBody, 0, nil
		r.Header.Del("Content-Length")
	} else {
		var ok bool
		var release func()
		if r, release, ok = f.takeBody(w, r); !ok {
			return
		}
		// Once the answer is relayed whole (streams included) or the
		// client left: the version it was sent to may be unloaded then.
		defer release()
	}
	f.proxy.ServeHTTP(w, r)
}

// authorized reports whether r carries the front's key (always, without one).
func (f *Front) authorized(r *http.Request) bool {
	if f.o.APIKey == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(f.o.APIKey)) == 1
}

// notFound answers a path off the allow-list, naming the route a
// non-canonical spelling of a route stands for.
func (f *Front) notFound(w http.ResponseWriter, r *http.Request) {
	msg := "no route for " + r.Method + " " + r.URL.EscapedPath()
	if c := path.Clean(r.URL.Path); c != r.URL.EscapedPath() {
		if _, ok := lookupRoute(c); ok {
			msg += ": send the path as " + c
		}
	}
	writeError(w, http.StatusNotFound, "not_found_error", msg, "", "")
}

// sentModel is the context key of the model name a request was sent to
// vLLM with, for modifyResponse.
type sentModel struct{}

// takeBody reads r's body under the cap and rewrites its model name,
// answering the client itself (and returning false) when it cannot. The
// request it returns carries the name sent (sentModel); release ends its
// count in inUse (use), to be called once the request ended.
func (f *Front) takeBody(w http.ResponseWriter, r *http.Request) (_ *http.Request, release func(), ok bool) {
	release = func() {}
	if r.Body == nil {
		return r, release, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.o.MaxBodyBytes))
	r.Body.Close()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("request body is larger than %d bytes", f.o.MaxBodyBytes), "", "request_too_large")
			return r, release, false
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "reading the request body: "+err.Error(), "", "")
		return r, release, false
	}
	body, sent, release, status, err := f.rewriteModel(body)
	if err != nil {
		writeError(w, status, "not_found_error", err.Error(), "model", "model_not_found")
		return r, release, false
	}
	if sent != "" {
		r = r.WithContext(context.WithValue(r.Context(), sentModel{}, sent))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil // the body is whole now: send it with a length
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return r, release, true
}

// rewriteModel replaces the top-level "model" of a JSON object body and
// returns the name sent ("" when there is none) and the release of its use
// (use). A body that is not a JSON object goes through as it is (vLLM
// answers it).
func (f *Front) rewriteModel(body []byte) ([]byte, string, func(), int, error) {
	none := func() {}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return body, "", none, 0, nil
	}
	var name string
	if json.Unmarshal(obj["model"], &name) != nil {
		return body, "", none, 0, nil
	}
	to, ok, release := f.use(name)
	if !ok {
		return nil, "", none, http.StatusNotFound, fmt.Errorf("model %q is not loaded (loaded: %s)", name, strings.Join(f.Loaded(), ", "))
	}
	if to == name {
		return body, name, release, 0, nil
	}
	obj["model"], _ = json.Marshal(to)
	out, err := json.Marshal(obj)
	if err != nil {
		release()
		return nil, "", none, http.StatusBadRequest, fmt.Errorf("re-encoding the request: %w", err)
	}
	return out, to, release, 0, nil
}

// modifyResponse adds a "<run>" alias to vLLM's /v1/models list for each
// run that has a current version, and notes a loaded version vLLM says
// does not exist.
func (f *Front) modifyResponse(resp *http.Response) error {
	if sent, _ := resp.Request.Context().Value(sentModel{}).(string); sent != "" && resp.StatusCode == http.StatusNotFound {
		f.noteGone(resp, sent)
		return nil
	}
	if resp.Request.URL.Path != f.base.Path+"/v1/models" || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading vLLM's model list: %w", err)
	}
	out := body
	var list struct {
		Object string                       `json:"object"`
		Data   []map[string]json.RawMessage `json:"data"`
	}
	if json.Unmarshal(body, &list) == nil {
		byID := map[string]map[string]json.RawMessage{}
		for _, m := range list.Data {
			var id string
			json.Unmarshal(m["id"], &id)
			byID[id] = m
		}
		f.mu.RLock()
		for _, run := range sortedKeys(f.runs) {
			rs := f.runs[run]
			src, ok := byID[runfolder.ServedName(run, rs.current)]
			if rs.current < 0 || !ok || byID[run] != nil {
				continue
			}
			alias := map[string]json.RawMessage{}
			for k, v := range src {
				alias[k] = v
			}
			alias["id"], _ = json.Marshal(run)
			list.Data = append(list.Data, alias)
		}
		f.mu.RUnlock()
		if b, err := json.Marshal(list); err == nil {
			out = b
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// noteGone marks name for the next Sync to load again when it is a version
// the front loaded and vLLM's 404 says "does not exist": vLLM restarted
// since. The answer still reaches the client unchanged.
func (f *Front) noteGone(resp *http.Response, name string) {
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if !bytes.Contains(head, []byte("does not exist")) {
		return
	}
	v, err := runfolder.ParseServed(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if rs := f.runs[v.Run]; err == nil && v.HasStep && rs != nil && slices.Contains(rs.loaded, v.Step) {
		if f.gone == nil {
			f.gone = map[string]bool{}
		}
		f.gone[name] = true
	}
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeError writes OpenAI's error object.
func writeError(w http.ResponseWriter, status int, typ, msg, param, code string) {
	e := apiError{Message: msg, Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	b, _ := json.Marshal(map[string]apiError{"error": e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// Watch calls Sync every Interval until ctx ends, logging what fails.
func (f *Front) Watch(ctx context.Context) {
	t := time.NewTicker(f.o.Interval)
	defer t.Stop()
	for {
		if err := f.Sync(ctx); err != nil && ctx.Err() == nil {
			f.o.Log.Warn("vllm: adapter sync", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
