// Package proxy is hone-collect's recording proxy: a user's own agent, in
// any language, points its OpenAI base URL at it. Each chat completion
// request is forwarded upstream with logprobs and vLLM's return_token_ids
// switched on, the upstream response goes back to the agent as upstream
// wrote it but for those two additions (choices' logprobs null, token_ids
// and prompt_token_ids left out, unless the agent asked for them itself),
// and the conversation is recorded as a trajectory keyed by the request
// headers X-Hone-Trajectory and X-Hone-Group (the group defaults to the
// trajectory). An answer without token_ids records the ids its logprobs
// tokens name, when the agent asked for vLLM's return_tokens_as_token_ids
// ("token_id:<id>"). A small HTTP call sets a trajectory's reward and closes it:
//
//	POST /hone/trajectories/{id}/reward   {"reward": 1, "metrics": {"steps": 3}, "metadata": {"judge": "exact"}}
//	POST /hone/groups/{id}/close          {"metadata": {"scenario": "s1"}, "metrics": {"difficulty": 3}}
//
// The reward's metadata (ART's Trajectory.metadata) go to the row's own
// metadata column; keys beginning "hone." are refused, being Hone's. The
// close body is optional: the group's metadata and metrics (ART's
// TrajectoryGroup.metadata and .metrics), written with the group.
//
// A group is flushed — written as a Parquet file of its own, atomically,
// into the output folder — when it is closed, or when GroupSize of its
// trajectories are closed. Trajectories still open in a closed group are
// written with Error "not closed". Requests without X-Hone-Trajectory are
// forwarded and not recorded.
//
// Streamed requests ("stream": true) are forwarded with the same
// additions, stream_options as the agent set them. Every server-sent event
// goes to the agent as upstream wrote it, less the same additions, flushed
// as soon as it is complete, while
// the proxy assembles the chunks into the turn it records: content, tool
// calls by index (arguments concatenated), finish reason, logprobs and
// vLLM's per-chunk token_ids, and the model that answered — the same turn
// a non-streamed request would have recorded. The turn is recorded before
// the event with its finish reason, upstream's error event or [DONE]
// reaches the agent, so a reward posted after the stream always finds it. When a stream ends badly (the
// agent disconnects, upstream breaks off, sends an error event or an event
// that is not JSON) the turn is recorded as far as it arrived and the
// trajectory keeps the error. Streamed requests with n > 1 are refused
// with a 400 (param "n"): the proxy records one choice per turn. So are
// recorded requests with continue_final_message or echo true, or
// add_generation_prompt false (param naming the field): their answer is
// not a whole turn after the generation prompt, the only turn a
// trajectory holds.
//
// A recorded request's chat_template_kwargs go upstream as sent and are
// recorded on the trajectory (trajectory.MetadataKeyChatTemplateKwargs):
// they change the prompt the model saw, which training must lay out. All
// turns of a trajectory must send the same ones; a turn that does not is
// refused with a 400 (param "chat_template_kwargs").
//
// Memory per request is bounded. A request body over MaxBodyBytes is
// answered 413 in OpenAI's error shape, as hone-serve answers it, before
// more than that is read and without contacting the upstream. Of an
// upstream answer the proxy holds at most MaxResponseBytes to record it; a
// larger answer still reaches the agent whole, passed through as it comes
// (the additions included, as are a stream's events past the limit and a
// streamed event over 1 MiB), and its turn is recorded with an error
// instead of a truncated turn.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/format/urlmask"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Options configures the proxy.
type Options struct {
	Upstream  string // upstream base URL, e.g. http://localhost:8000/v1 (hone-collect proxy fills it from $OPENAI_BASE_URL; this package reads no environment)
	APIKey    string // sent upstream when set (else the agent's Authorization passes through)
	Listen    string // address to listen on
	OutDir    string // folder for the flushed groups: a path, a file:// URL or an object-store folder (s3://…)
	GroupSize int    // flush a group once this many of its trajectories are closed (0: only on close)
	Run       string // run name recorded in every row
	// NoTokenIDs leaves vLLM's return_token_ids out of the requests sent
	// upstream, for an upstream that refuses parameters it does not know
	// (OpenAI's API answers it with a 400). Turns are then recorded
	// without token ids, and training tokenizes their text.
	NoTokenIDs bool
	// UpstreamFrom names where Upstream came from, for the error that
	// refuses an upstream that is the proxy itself (default "--upstream").
	UpstreamFrom string

	MaxBodyBytes     int64 // largest request body accepted, 413 beyond (0: DefaultMaxBodyBytes)
	MaxResponseBytes int64 // most of one upstream answer held to record it (0: DefaultMaxResponseBytes)
	// DrainTimeout is how long Run, once its ctx ended, lets requests in
	// flight finish (0: DefaultDrainTimeout); then their connections are
	// closed, a warning says how many, and Run returns an error wrapping
	// context.DeadlineExceeded (hone-serve's --drain-timeout).
	DrainTimeout time.Duration

	Log        *slog.Logger
	HTTPClient *http.Client
	OnListen   func(addr string) // called with the bound address
}

const (
	// DefaultMaxBodyBytes is hone-serve's default --max-body-bytes, so that
	// a request the proxy takes is one hone-serve behind it takes too.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultMaxResponseBytes leaves room for the largest answers an agent
	// asks for: 32k tokens with 20 top logprobs each are about 35 MB.
	DefaultMaxResponseBytes = 64 << 20
	// DefaultDrainTimeout is hone-serve's default --drain-timeout: the
	// generations the proxy relays get as long as the server gives them.
	DefaultDrainTimeout = 60 * time.Second
)

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Upstream, "upstream", "", "upstream OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (default $OPENAI_BASE_URL)")
	fs.StringVar(&o.APIKey, "api-key", "", "API key for the upstream (default: the agent's own Authorization header)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:8100", "address to listen on")
	fs.StringVarP(&o.OutDir, "output-dir", "o", "", "folder where each flushed group is written as a Parquet file: a path, a file:// URL or an object-store folder (s3://…) (required)")
	fs.IntVar(&o.GroupSize, "group-size", 0, "flush a group once this many of its trajectories have a reward (0: only on POST /hone/groups/{id}/close)")
	fs.StringVar(&o.Run, "run", "proxy", "run name recorded in every row and naming the files (<run>-000001.parquet): a letter or digit, then letters, digits, '.', '_' or '-'")
	fs.BoolVar(&o.NoTokenIDs, "no-token-ids", false, "do not ask the upstream for the sampled token ids (vLLM's return_token_ids), for one that refuses parameters it does not know, as OpenAI's API does; turns are recorded without them and training tokenizes their text")
	fs.Int64Var(&o.MaxBodyBytes, "max-body-bytes", DefaultMaxBodyBytes, "largest request body accepted (413 beyond, as hone-serve)")
	// Positive: 0 is Options' "default", and a user who gave it to skip the
	// wait would have waited the default minute.
	flagval.PositiveDuration(fs, &o.DrainTimeout, "drain-timeout", DefaultDrainTimeout, "on shutdown (SIGINT/SIGTERM), how long requests in flight may finish; then their connections are closed, a warning says how many, and the exit code is 130")
	fs.Int64Var(&o.MaxResponseBytes, "max-response-bytes", DefaultMaxResponseBytes, "most bytes of one upstream answer held to record it; a larger answer still reaches the agent, and its turn is recorded with an error")
}

// Proxy is the recording HTTP handler.
type Proxy struct {
	o      Options
	client *http.Client
	// made is the topmost folder start made for the output ("" when the
	// output folder was there): a start refused after it (an upstream
	// that is the proxy itself, a busy port) removes what it made.
	made string

	mu      sync.Mutex
	groups  map[string]*group
	flushed map[string]string // written group id -> its file
	// written maps each trajectory id in the output folder (this run's
	// files and those there at start) to its file: a folder holding one
	// twice is refused by the stages that read it.
	written map[string]string
	// nulls are the metric names posted as null, said once each in the
	// log (under mu).
	nulls  map[string]bool
	wg     sync.WaitGroup // flushes in progress
	files  int
	active atomic.Int64 // requests being served, for the drain's warning
}

type group struct {
	order []string
	trajs map[string]*record
}

type record struct {
	t trajectory.Trajectory
	// kwargs are the chat_template_kwargs of the trajectory's turns, as
	// canonical JSON ("" for none): every turn must send the same.
	kwargs string
	turns  []trajectory.Message // assistant turns as produced, with tokens
	errs   []string             // why turns failed (broken streams)
	closed bool
}

// New returns the proxy handler, for a server of the caller's own. It
// reads the output folder to the end (start); Run, which hone-collect
// proxy serves by, stops that reading when its context ends.
func New(o Options) (*Proxy, error) {
	return start(context.Background(), o)
}

// start is New, with ctx bounding the reading of the output folder (its
// listing and the ids of its files), which grows with
// all the folder holds: run with Background, a Ctrl-C at start waited for
// the last file, or forever on an object store that did not answer.
func start(ctx context.Context, o Options) (*Proxy, error) {
	if o.Upstream == "" {
		return nil, stageerr.Usagef("proxy: no upstream")
	}
	// Refused at start, as hone-serve --upstream refuses it: a URL without
	// its scheme (vLLM's "localhost:8000/v1") started a proxy whose every
	// forwarded request failed with "unsupported protocol scheme".
	if err := flagval.BaseURL("proxy: upstream", o.Upstream); err != nil {
		return nil, stageerr.Usage(err)
	}
	if o.OutDir == "" {
		return nil, stageerr.Usagef("proxy: no output folder")
	}
	// A negative size flushed groups only on their close, as 0 does,
	// without a word; hone-collect's own --group-size refuses it too.
	if o.GroupSize < 0 {
		return nil, stageerr.Usagef("proxy: --group-size %d: want 0 (flush a group only on its close) or more", o.GroupSize)
	}
	// A negative limit started a proxy with the default one in its place,
	// without a word, where the user had asked for a limit of their own.
	if o.MaxBodyBytes < 0 {
		return nil, stageerr.Usagef("proxy: --max-body-bytes %d: want 0 (the default, %d) or more", o.MaxBodyBytes, int64(DefaultMaxBodyBytes))
	}
	if o.MaxResponseBytes < 0 {
		return nil, stageerr.Usagef("proxy: --max-response-bytes %d: want 0 (the default, %d) or more", o.MaxResponseBytes, int64(DefaultMaxResponseBytes))
	}
	// The run names the files (<run>-N.parquet): one with a "/" put them
	// in a folder below the output folder, where a restarted proxy's
	// numbering did not look, and its first file replaced the last run's.
	if o.Run != "" {
		if err := runfolder.CheckRun(o.Run); err != nil {
			return nil, stageerr.Usagef("proxy: --run: %v", err)
		}
	}
	var made string
	if !fileset.IsURL(o.OutDir) { // an object-store folder needs no making
		dir, err := fileset.LocalPath(o.OutDir) // a file:// URL is its path
		if err != nil {
			return nil, stageerr.Usagef("proxy: output folder: %v", err)
		}
		made, err = mkdirNew(dir)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		o.OutDir = dir
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	c := o.HTTPClient
	if c == nil {
		c = &http.Client{}
	}
	// One listing, for both uses below: over an object store it is a
	// request per 1000 objects.
	in, err := fileset.ListSet(ctx, o.OutDir, ".parquet")
	if err != nil {
		removeMade(o.OutDir, made)
		return nil, fmt.Errorf("proxy: output folder: %w", err)
	}
	defer in.Close()
	// A folder an earlier run wrote into keeps its files: number ours after
	// the last one there of the same run, so that none is replaced.
	p := &Proxy{o: o, client: c, made: made, groups: map[string]*group{}, flushed: map[string]string{}, written: map[string]string{}, files: lastFileNumber(in.Names(), o.Run)}
	if err := p.readWritten(ctx, in); err != nil {
		return nil, fmt.Errorf("proxy: output folder: %w", err)
	}
	return p, nil
}

// readWritten takes the group and trajectory ids of the Parquet files in
// the output folder (in, its listing), so that a proxy started again
// refuses them, for a local folder and an object-store one alike: the
// stages reading either refuse an id twice. It reads the id columns alone
// (trajectory.ReadIDs), several files at once: decoding every
// conversation made the start grow with all the run ever wrote (about
// 10 s for 2000 groups), and over an object store each file is a few
// round trips, which one file after another spent waiting. An id the
// folder holds twice, which the stages reading it refuse, is refused here
// too, naming both files.
func (p *Proxy) readWritten(ctx context.Context, in *fileset.Set) error {
	var prevFile, prevGroup string // the group being read: its rows are contiguous
	err := trajectory.ReadIDs(ctx, in, func(r trajectory.RowIDs) error {
		if file, ok := p.written[r.TrajectoryID]; ok {
			return fmt.Errorf("trajectory %q is in %s and again in %s (row %d)", r.TrajectoryID, fileset.DisplayName(file), fileset.DisplayName(r.File), r.Row)
		}
		p.written[r.TrajectoryID] = r.File
		if r.File == prevFile && r.GroupID == prevGroup {
			return nil
		}
		if file, ok := p.flushed[r.GroupID]; ok {
			return fmt.Errorf("group %q is in %s and again in %s (row %d)", r.GroupID, fileset.DisplayName(file), fileset.DisplayName(r.File), r.Row)
		}
		prevFile, prevGroup = r.File, r.GroupID
		p.flushed[r.GroupID] = r.File
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the ids of its files: %w", err)
	}
	return nil
}

// lastFileNumber returns the highest N of the files <run>-N.parquet among
// names, the output folder's listing (0 when there is none).
func lastFileNumber(names []string, run string) int {
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(run) + `-([0-9]+)\.parquet$`)
	last := 0
	for _, n := range names {
		// fileset.Base, not path.Base: a listed object-store name ends
		// in the URL's query ("?endpoint=http://…"), not in the file's.
		m := re.FindStringSubmatch(fileset.Base(n))
		if m == nil {
			continue
		}
		if k, err := strconv.Atoi(m[1]); err == nil && k > last {
			last = k
		}
	}
	return last
}

var (
	rewardPath = regexp.MustCompile(`^/hone/trajectories/([^/]+)/reward$`)
	closePath  = regexp.MustCompile(`^/hone/groups/([^/]+)/close$`)
)

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.active.Add(1)
	defer p.active.Add(-1)
	// Every route reads its body through the cap; a declared length over
	// it is refused before a byte of the body is read.
	if r.ContentLength > p.o.MaxBodyBytes {
		p.tooLarge(w)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, p.o.MaxBodyBytes)
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		p.chat(w, r)
	case r.Method == http.MethodPost && rewardPath.MatchString(r.URL.Path):
		p.reward(w, r, rewardPath.FindStringSubmatch(r.URL.Path)[1])
	case r.Method == http.MethodPost && closePath.MatchString(r.URL.Path):
		id := closePath.FindStringSubmatch(r.URL.Path)[1]
		raw, ok := p.readBody(w, r)
		if !ok {
			return
		}
		fields, err := parseGroupFields(raw)
		if err != nil {
			httpError(w, http.StatusBadRequest, "body: "+err.Error())
			return
		}
		p.warnNull("group metric", fields.nulls)
		if err := p.closeGroup(id, fields); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, errNoGroup) {
				code = http.StatusNotFound
			}
			httpError(w, code, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		p.forward(w, r, nil, nil)
	}
}

func httpError(w http.ResponseWriter, code int, msg string) {
	apiError(w, code, msg, "")
}

// apiError answers with OpenAI's error object; param names the offending
// request field ("" for none).
func apiError(w http.ResponseWriter, code int, msg, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	e := map[string]any{"message": msg, "type": "hone_proxy_error", "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	switch code {
	case http.StatusBadRequest:
		e["type"] = "invalid_request_error"
	case http.StatusRequestEntityTooLarge: // as hone-serve answers it
		e["type"], e["code"] = "invalid_request_error", "request_too_large"
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	w.Write(b)
}

func (p *Proxy) tooLarge(w http.ResponseWriter) {
	httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes (hone-collect proxy --max-body-bytes)", p.o.MaxBodyBytes))
}

// readBody reads r's body, which ServeHTTP capped; past the cap it answers
// 413, on other errors 400, and returns false.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		p.tooLarge(w)
		return nil, false
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, "read request: "+err.Error())
		return nil, false
	}
	return body, true
}

// answer is what forward relayed: upstream's status and, when it was at
// most MaxResponseBytes, its body.
type answer struct {
	status   int
	body     []byte
	tooLarge bool // the body was larger, and went to the agent unheld
}

// forward sends r (with body, if not nil) upstream and copies the response
// to w, through edit when it is not nil and upstream answered 200 with at
// most MaxResponseBytes; a.body is the answer as upstream sent it. An
// event stream, when edit is nil, is relayed as it comes and not held. ok
// is false when the agent got the proxy's error instead.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, edit func([]byte) []byte) (a answer, ok bool) {
	if body == nil {
		if body, ok = p.readBody(w, r); !ok {
			return a, false
		}
	}
	resp, ok := p.send(w, r, body)
	if !ok {
		return a, false
	}
	defer resp.Body.Close()
	if edit == nil && isEventStream(resp) {
		// A stream the proxy does not record (no trajectory header, a
		// route other than chat completions) goes out as it comes, each
		// read flushed: held whole, the agent would get no event before
		// upstream's last.
		copyHeader(w, resp)
		w.WriteHeader(resp.StatusCode)
		a.status = resp.StatusCode // a.body nil: nothing was held
		relay(w, resp.Body)
		return a, true
	}
	// An answer that fits is held whole before anything goes out, so that
	// an answer upstream breaks off becomes a 502, not a truncated 200.
	out, err := io.ReadAll(io.LimitReader(resp.Body, p.o.MaxResponseBytes+1))
	if err != nil {
		httpError(w, http.StatusBadGateway, "upstream body: "+err.Error())
		return a, false
	}
	copyHeader(w, resp)
	w.WriteHeader(resp.StatusCode)
	a.status = resp.StatusCode
	if int64(len(out)) <= p.o.MaxResponseBytes {
		if edit != nil && resp.StatusCode == http.StatusOK {
			w.Write(edit(out))
		} else {
			w.Write(out)
		}
		a.body = out
		return a, true
	}
	w.Write(out)
	// Past the cap the rest passes through as it comes; the agent sees
	// upstream breaking off as a truncated body, as it would without us.
	a.tooLarge = true
	io.Copy(w, resp.Body)
	return a, true
}

// isEventStream reports whether resp is a stream of server-sent events.
func isEventStream(resp *http.Response) bool {
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), "text/event-stream")
}

// relay copies body to w as it comes, flushing after each read, until
// body ends or the agent is gone.
func relay(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// upstreamCredentials is the warning for credentials in the upstream URL's
// userinfo, "" when it has none. net/http sends them as Basic auth only
// with a request that has no Authorization header, and send sets the
// agent's own (OpenAI clients always send one) or --api-key's Bearer: an
// upstream that needs them answered 401 with no word of why. Masked
// (urlmask.Shown), as the listening line is.
func upstreamCredentials(o Options) string {
	u, err := url.Parse(o.Upstream)
	if err != nil || u.User == nil {
		return ""
	}
	if o.APIKey != "" {
		return fmt.Sprintf("--upstream %s: the credentials in the URL's userinfo are not sent (the upstream gets --api-key's key, as Authorization: Bearer)", urlmask.Shown(o.Upstream))
	}
	return fmt.Sprintf("--upstream %s: the credentials in the URL's userinfo go upstream (as Basic auth) only with an agent request that carries no Authorization of its own, and OpenAI clients always send one; give the upstream's key with --api-key", urlmask.Shown(o.Upstream))
}

// send makes r's request, with body, to the upstream. When it cannot, it
// answers the agent with a 502 and returns false.
func (p *Proxy) send(w http.ResponseWriter, r *http.Request, body []byte) (*http.Response, bool) {
	// The path as the agent escaped it: the decoded one turned a model
	// id's %2F into a path separator upstream, and a %25 into a stray '%'
	// the upstream URL failed to parse with.
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v1")
	u := strings.TrimSuffix(p.o.Upstream, "/") + rest
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u, bytes.NewReader(body))
	if err != nil {
		// url.Parse's error quotes u whole, upstream's userinfo and all
		// (the escaped path keeps agents' paths from getting here).
		httpError(w, http.StatusBadGateway, urlmask.ShownErr(err).Error())
		return nil, false
	}
	// The agent's own headers that the server reads: OpenAI's API bills
	// and scopes a request by its organization and project.
	for _, h := range []string{"Content-Type", "Authorization", "Accept", "OpenAI-Organization", "OpenAI-Project"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	if p.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.o.APIKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// The answer ends in the agent's logs: a token user masked (urlmask.ShownErr).
		httpError(w, http.StatusBadGateway, "upstream: "+urlmask.ShownErr(err).Error())
		return nil, false
	}
	return resp, true
}

// copyHeader copies the upstream response's headers to w, but for the
// length, which the proxy's own server sets.
func copyHeader(w http.ResponseWriter, resp *http.Response) {
	for k, vs := range resp.Header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
}

func (p *Proxy) chat(w http.ResponseWriter, r *http.Request) {
	tid := r.Header.Get("X-Hone-Trajectory")
	body, ok := p.readBody(w, r)
	if !ok {
		return
	}
	if tid == "" {
		p.forward(w, r, body, nil)
		return
	}
	gid := r.Header.Get("X-Hone-Group")
	if gid == "" {
		gid = tid
	}
	req, err := chatObject(body)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	var opts struct {
		Stream bool `json:"stream"`
		N      *int `json:"n"`
	}
	if err := json.Unmarshal(body, &opts); err != nil {
		httpError(w, http.StatusBadRequest, "stream, n: "+err.Error())
		return
	}
	if param, why := unrecordable(req, opts.Stream && opts.N != nil && *opts.N > 1); param != "" {
		apiError(w, http.StatusBadRequest, why, param)
		return
	}
	var conv struct {
		Model    string            `json:"model"`
		Messages []chatmsg.Message `json:"messages"`
		Tools    []trajectory.Tool `json:"tools"`
	}
	if err := json.Unmarshal(body, &conv); err != nil {
		httpError(w, http.StatusBadRequest, "messages: "+err.Error())
		return
	}
	// A tool the file cannot hold would make the whole group unwritable
	// at its flush: refuse it now, as a tool call without a name is.
	for i, tool := range conv.Tools {
		if tool.Name == "" {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("tools[%d]: no function name (a chat completions tool is {\"type\": \"function\", \"function\": {\"name\": ...}})", i), "tools")
			return
		}
	}
	kwargs, err := p.turnKwargs(tid, gid, req)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error(), "chat_template_kwargs")
		return
	}
	msgs := make([]trajectory.Message, len(conv.Messages))
	for i, m := range conv.Messages {
		if msgs[i], err = trajectory.FromChat(m); err != nil {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("messages[%d]: %v", i, err))
			return
		}
	}
	if code, err := p.admit(tid, gid); err != nil {
		httpError(w, code, err.Error())
		return
	}
	// What the proxy adds for its recording is taken out of the answer
	// again, unless the agent asked for it too.
	add := addedFor(req)
	if p.o.NoTokenIDs {
		add.tokenIDs = false // not asked for: nothing to take out
	}
	// top_logprobs without logprobs is a 400 from OpenAI and vLLM; the
	// proxy's own logprobs would let it through, to be answered with the
	// logprobs taken out again, so it says so itself.
	if tl := bytes.TrimSpace(req["top_logprobs"]); add.logprobs && len(tl) > 0 && string(tl) != "null" {
		apiError(w, http.StatusBadRequest, "top_logprobs needs logprobs: true (as OpenAI's API and vLLM answer it)", "top_logprobs")
		return
	}
	if err := p.sendRecordedTools(req, conv.Tools); err != nil {
		apiError(w, http.StatusBadRequest, err.Error(), "tools")
		return
	}
	req["logprobs"] = json.RawMessage("true")
	if !p.o.NoTokenIDs {
		req["return_token_ids"] = json.RawMessage("true")
	}
	fwd, _ := json.Marshal(req)
	start := time.Now()
	tools := conv.Tools
	if opts.Stream {
		p.streamChat(w, r, fwd, add, func(turn trajectory.Message, err error) {
			turn.Latency = time.Since(start)
			if err != nil {
				p.o.Log.Warn("proxy: streamed turn recorded with an error", "trajectory", tid, "error", err)
			}
			p.record(tid, gid, conv.Model, kwargs, msgs, tools, turn, err, start)
		})
		return
	}
	a, ok := p.forward(w, r, fwd, add.strip)
	if !ok || a.status != http.StatusOK {
		return
	}
	if a.tooLarge {
		err := fmt.Errorf("upstream's answer is larger than %d bytes (hone-collect proxy --max-response-bytes): the agent got it whole, the turn is left empty", p.o.MaxResponseBytes)
		p.o.Log.Warn("proxy: response not recorded", "trajectory", tid, "error", err)
		p.record(tid, gid, conv.Model, kwargs, msgs, tools, trajectory.Message{Role: "assistant"}, err, start)
		return
	}
	turn, err := parseTurn(a.body)
	if err != nil {
		// The agent took it: an empty turn with the error, as for a
		// stream, not an episode that looks whole without it.
		err = fmt.Errorf("upstream's answer was not recorded: %w", err)
		p.o.Log.Warn("proxy: response not recorded", "trajectory", tid, "error", err)
		p.record(tid, gid, conv.Model, kwargs, msgs, tools, trajectory.Message{Role: "assistant"}, err, start)
		return
	}
	turn.Latency = time.Since(start)
	p.record(tid, gid, conv.Model, kwargs, msgs, tools, turn, nil, start)
}

// chatObject decodes a chat request body to its fields. A NaN (json.dumps
// of a float('nan') temperature) is named, as on the reward and close
// routes, not left as encoding/json's "invalid character 'N'".
func chatObject(body []byte) (map[string]json.RawMessage, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		if nan := nonJSONNumber(body, err); nan != nil {
			return nil, fmt.Errorf("request: %w", nan)
		}
		return nil, fmt.Errorf("request is not a JSON object: %w", err)
	}
	return req, nil
}

// unrecordable names the field of a chat request whose answer would not
// be a turn the proxy can record, with a message saying why; "" for none.
// A recorded turn is trained as the model's whole answer, after the
// conversation's generation prompt (format/layout): a continued final
// message (a prefill), an echoed last message, or a prompt without the
// generation prompt give an answer that is not that, and the trajectory
// format has no place for a turn's unsampled part. Refused, the agent
// learns it at once, where recording them made two turns of one, or put
// text the model never sampled among its trained tokens.
//
// A streamed answer is recorded choice by choice as it arrives; with
// n > 1 (streamedN) the agent keeps one of several interleaved choices,
// which the proxy could not tell apart, so it is refused too.
func unrecordable(req map[string]json.RawMessage, streamedN bool) (param, why string) {
	is := func(k, v string) bool { return string(bytes.TrimSpace(req[k])) == v }
	const fix = " Leave it out, or send this request without X-Hone-Trajectory to have it forwarded unrecorded."
	switch {
	case streamedN:
		return "n", "the recording proxy does not record streamed requests with n > 1; send n=1 or stream=false"
	case is("continue_final_message", "true"):
		return "continue_final_message", "the recording proxy does not record continue_final_message: true: the answer continues the last message (a prefill), which a trajectory cannot hold as one turn with only the continuation's tokens trained." + fix
	case is("echo", "true"):
		return "echo", "the recording proxy does not record echo: true: the answer's content would begin with the last message's, text the model did not sample." + fix
	case is("add_generation_prompt", "false"):
		return "add_generation_prompt", "the recording proxy does not record add_generation_prompt: false: the model continues the prompt without the assistant's header, and a recorded turn is trained after it." + fix
	}
	return "", ""
}

// admit checks a recorded request's ids before anything goes upstream,
// and returns the status to answer with when they cannot be recorded.
func (p *Proxy) admit(tid, gid string) (int, error) {
	// The reward and close routes name the ids in their paths, which are
	// decoded before routing: under an id with a "/" a trajectory could
	// never get its reward (the POST went upstream, "no route"), nor its
	// group be closed.
	for _, h := range []struct{ name, id string }{{"X-Hone-Trajectory", tid}, {"X-Hone-Group", gid}} {
		if strings.Contains(h.id, "/") {
			return http.StatusBadRequest, fmt.Errorf(`%s %q: an id cannot hold a "/", since the /hone/ routes name it in their paths (use printable ASCII without spaces or "/")`, h.name, h.id)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if file, ok := p.flushed[gid]; ok {
		return http.StatusConflict, fmt.Errorf("group %s was already written, to %s: a group id names one group of the output folder", gid, fileset.DisplayName(file))
	}
	if file, ok := p.written[tid]; ok {
		return http.StatusConflict, fmt.Errorf("trajectory %q was already written, to %s: a trajectory id names one episode of the output folder, which the stages reading it refuse twice (give this one another id)", tid, fileset.DisplayName(file))
	}
	// One id in two open groups would leave its reward POST to whichever
	// record the map's order found first.
	for id, g := range p.groups {
		if _, ok := g.trajs[tid]; ok && id != gid {
			return http.StatusConflict, fmt.Errorf("trajectory %q is recorded in group %q, still open: a trajectory id names one episode (give this one another id, or close group %q first)", tid, id, id)
		}
	}
	return 0, nil
}

// requestKwargs is a recorded request's chat_template_kwargs as canonical
// JSON, "" for none (absent, null or {}): they change the prompt the
// upstream renders, so the trajectory records them for training to lay
// its turns out under the same prompt.
func requestKwargs(req map[string]json.RawMessage) (string, error) {
	raw := bytes.TrimSpace(req["chat_template_kwargs"])
	if len(raw) == 0 {
		return "", nil
	}
	_, canon, err := trajectory.CanonicalChatTemplateKwargs(string(raw))
	if err != nil {
		return "", fmt.Errorf("chat_template_kwargs %w", err)
	}
	return canon, nil
}

// turnKwargs is the canonical chat_template_kwargs of a request for
// trajectory tid, refused when they differ from those of the turns
// recorded for it: the trajectory records one set, which training lays
// every turn out under.
func (p *Proxy) turnKwargs(tid, gid string, req map[string]json.RawMessage) (string, error) {
	kwargs, err := requestKwargs(req)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[gid]
	if g == nil {
		return kwargs, nil
	}
	rec := g.trajs[tid]
	if rec == nil || rec.kwargs == kwargs {
		return kwargs, nil
	}
	return "", fmt.Errorf("chat_template_kwargs %s, where trajectory %q's earlier turns sent %s: every turn of a trajectory is served and trained under one set of kwargs (send the same, or give this conversation another X-Hone-Trajectory)", orNone(kwargs), tid, orNone(rec.kwargs))
}

// orNone names kwargs in a message, "none" when there are none.
func orNone(kwargs string) string {
	if kwargs == "" {
		return "none"
	}
	return kwargs
}

// sendRecordedTools puts tools, as the trajectory records them, in place of
// the request's own. Training lays each turn out with the recorded tools,
// and a chat template prints a tool's JSON whole, so the agent's own form
// (a "strict" key, as the OpenAI SDKs' pydantic_function_tool writes, or
// description after parameters) would show the model another prompt than
// the one its tokens are then trained under. With NoTokenIDs the agent's
// tools go as it wrote them: training tokenizes those turns' text under the
// recorded tools anyway, and the upstream (OpenAI's API) acts on keys such
// as "strict".
func (p *Proxy) sendRecordedTools(req map[string]json.RawMessage, tools []trajectory.Tool) error {
	if len(tools) == 0 || p.o.NoTokenIDs {
		return nil
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	req["tools"] = b
	return nil
}

// record adds an assistant turn, answering the conversation msgs, to
// trajectory tid of group gid. A turn that came with an error (a broken
// stream) becomes the trajectory's last message as far as it arrived, and
// the error stays on the trajectory even when the agent carries on, so
// the episode is never trained on as if nothing had happened.
func (p *Proxy) record(tid, gid, model, kwargs string, msgs []trajectory.Message, tools []trajectory.Tool, turn trajectory.Message, turnErr error, start time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.flushed[gid]; ok {
		p.o.Log.Warn("proxy: turn not recorded: its group was flushed meanwhile", "trajectory", tid, "group", gid)
		return
	}
	g := p.groups[gid]
	if g == nil {
		g = &group{trajs: map[string]*record{}}
		p.groups[gid] = g
	}
	rec := g.trajs[tid]
	if rec == nil {
		rec = &record{t: trajectory.Trajectory{ID: tid, GroupID: gid, Run: p.o.Run, Model: model, Env: "proxy", CreatedAt: time.Now().UTC(), StartedAt: start.UTC()}, kwargs: kwargs}
		if kwargs != "" {
			rec.t.Metadata = map[string]string{trajectory.MetadataKeyChatTemplateKwargs: kwargs}
		}
		g.trajs[tid] = rec
		g.order = append(g.order, tid)
	}
	if rec.closed {
		p.o.Log.Warn("proxy: request for a closed trajectory", "trajectory", tid)
		return
	}
	// Requests of one trajectory may overlap: it started with the first
	// one sent, whichever was answered first.
	if start.Before(rec.t.StartedAt) {
		rec.t.StartedAt = start.UTC()
	}
	if turnErr == nil && kwargs != rec.kwargs {
		// Two first turns sent at once, with other kwargs each: turnKwargs
		// let both by before either was recorded.
		turnErr = fmt.Errorf("chat_template_kwargs %s, where the trajectory's first turn sent %s: its prompt is not the one training lays out", orNone(kwargs), orNone(rec.kwargs))
	}
	if turnErr == nil {
		if err := writableTurn(turn); err != nil {
			// The answer reached the agent; the file cannot hold it as the
			// upstream gave it (token ids and logprobs that do not pair
			// up). Its tokens are left out, with the error, so that the
			// group can still be written.
			turn.TokenIDs, turn.Logprobs = nil, nil
			turnErr = fmt.Errorf("the answer's tokens were not recorded: %w", err)
		}
	}
	if turnErr != nil {
		rec.errs = append(rec.errs, fmt.Sprintf("turn %d: %v", len(rec.turns)+len(rec.errs)+1, turnErr))
	} else {
		rec.turns = append(rec.turns, turn)
	}
	if writableTurn(turn) == nil {
		rec.t.Messages = append(msgs, turn)
	} else {
		rec.t.Messages = msgs // the error says what the turn was
	}
	rec.t.Tools = tools
	if turn.AnswerModel != "" {
		// As hone-collect's own loop records it: the adapter that answered,
		// and its step when that is a "<run>@<N>" name.
		rec.t.Adapter = turn.AnswerModel
		step, _ := runfolder.ServedStep(turn.AnswerModel)
		rec.t.Step = int64(step)
	}
	rec.t.FinishedAt = time.Now().UTC()
}

// writableTurn checks an assistant turn as a trajectory file holds it
// (trajectory.Validate): a turn that fails would make its whole group
// unwritable at the flush.
func writableTurn(m trajectory.Message) error {
	t := trajectory.Trajectory{ID: "t", GroupID: "g", Messages: []trajectory.Message{m}}
	return t.Validate()
}

// parseTurn reads the assistant turn, with token ids and logprobs, from a
// chat completion response.
func parseTurn(body []byte) (trajectory.Message, error) {
	var c struct {
		Model   string `json:"model"`
		Choices []struct {
			FinishReason string          `json:"finish_reason"`
			Message      chatmsg.Message `json:"message"`
			TokenIDs     []int32         `json:"token_ids"`
			Logprobs     *struct {
				Content []struct {
					Token   string  `json:"token"`
					Logprob float32 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return trajectory.Message{}, err
	}
	if len(c.Choices) == 0 {
		return trajectory.Message{}, errors.New("no choices")
	}
	ch := c.Choices[0]
	m, err := trajectory.FromChat(ch.Message)
	if err != nil {
		return m, err
	}
	m.Role, m.Trainable, m.TokenIDs, m.FinishReason, m.AnswerModel = "assistant", true, ch.TokenIDs, ch.FinishReason, c.Model
	if ch.Logprobs != nil {
		var tokens []string
		for _, lp := range ch.Logprobs.Content {
			m.Logprobs = append(m.Logprobs, lp.Logprob)
			tokens = append(tokens, lp.Token)
		}
		m.TokenIDs = trajectory.SampledIDs(m.TokenIDs, tokens)
	}
	return m, nil
}

// sameTurn reports whether an assistant message the agent sent back is the
// turn recorded earlier.
func sameTurn(a, b trajectory.Message) bool {
	if a.Content != b.Content || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i].ID != b.ToolCalls[i].ID || a.ToolCalls[i].Name != b.ToolCalls[i].Name || a.ToolCalls[i].Arguments != b.ToolCalls[i].Arguments {
			return false
		}
	}
	return true
}

// finish puts the recorded token data on the assistant turns the agent
// sent back: the last request's messages are the conversation as the
// agent kept it.
func (rec *record) finish() trajectory.Trajectory {
	t := rec.t
	if len(rec.errs) > 0 {
		errs := rec.errs
		if t.Error != "" {
			errs = append(errs[:len(errs):len(errs)], t.Error)
		}
		t.Error = strings.Join(errs, "; ")
	}
	t.Messages = append([]trajectory.Message(nil), t.Messages...)
	k := 0
	for i, m := range t.Messages {
		if m.Role != "assistant" || m.Trainable {
			continue
		}
		for j := k; j < len(rec.turns); j++ {
			if sameTurn(m, rec.turns[j]) {
				t.Messages[i] = rec.turns[j]
				k = j + 1
				break
			}
		}
	}
	return t
}

func (p *Proxy) reward(w http.ResponseWriter, r *http.Request, tid string) {
	var body struct {
		Reward   json.RawMessage            `json:"reward"`
		Metrics  map[string]json.RawMessage `json:"metrics"`
		Metadata map[string]json.RawMessage `json:"metadata"`
		Error    json.RawMessage            `json:"error"`
	}
	raw, ok := p.readBody(w, r)
	if !ok {
		return
	}
	// A misspelt key ("rewrd") is refused, as the close route refuses
	// one, rather than recorded as a trajectory without a reward.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		if nan := nonJSONNumber(raw, err); nan != nil {
			httpError(w, http.StatusBadRequest, "body: "+nan.Error())
			return
		}
		httpError(w, http.StatusBadRequest, "body: "+err.Error()+` (want {"reward": …, "metrics": {...}, "metadata": {...}, "error": "…"})`)
		return
	}
	reward, errText, err := rewardAndError(body.Reward, body.Error)
	if err != nil {
		httpError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	metrics, nulls, err := numbers(body.Metrics)
	if err != nil {
		httpError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	metadata, err := trajectoryMetadata(body.Metadata)
	if err != nil {
		httpError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	p.warnNull("metric", nulls)
	p.mu.Lock()
	var gid string
	var rec *record
	for id, g := range p.groups {
		if x, ok := g.trajs[tid]; ok {
			gid, rec = id, x
		}
	}
	if rec == nil {
		p.mu.Unlock()
		httpError(w, http.StatusNotFound, fmt.Sprintf("no open trajectory %q", tid))
		return
	}
	// A second reward (a retried POST, an agent that scores an episode
	// twice) would silently replace the first: the first stands, and the
	// caller learns that its POST changed nothing.
	if rec.closed {
		p.mu.Unlock()
		httpError(w, http.StatusConflict, fmt.Sprintf("trajectory %q already has its reward: the first one posted stands (one reward per trajectory)", tid))
		return
	}
	rec.t.Reward, rec.t.Metrics, rec.t.Error = reward, metrics, errText
	// Added to what the proxy recorded (the chat template kwargs), which
	// no posted key can overwrite: trajectoryMetadata refused "hone." keys.
	if len(metadata) > 0 {
		md := maps.Clone(rec.t.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		maps.Copy(md, metadata)
		rec.t.Metadata = md
	}
	rec.closed = true
	var flush func() error
	if p.o.GroupSize > 0 {
		n := 0
		for _, x := range p.groups[gid].trajs {
			if x.closed {
				n++
			}
		}
		if n >= p.o.GroupSize {
			// Taken under the lock that found the trajectory: a close
			// arriving now finds the group gone, rather than this reward
			// (already recorded) finding it closed and answering 500.
			flush, _ = p.detachLocked(gid, groupFields{})
		}
	}
	p.mu.Unlock()
	if flush != nil {
		if err := flush(); err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// rewardAndError reads a reward POST's reward (a number; null or absent
// for none) and error (a string; null or absent for none), refusing any
// other value naming the field and the value, as numbers names a bad
// metric, rather than with encoding/json's "Go struct field" wording. A
// boolean reward is refused, not read as 1 or 0 as a metric is: OpenPipe
// ART's Trajectory.reward is a float, where its metrics name bool.
func rewardAndError(reward, errField json.RawMessage) (*float64, string, error) {
	var r *float64
	if len(reward) > 0 && string(reward) != "null" {
		var f float64
		if err := json.Unmarshal(reward, &f); err != nil {
			// A JSON number that failed is one past float64's range
			// (1e999): say so, since "want a number" alone would puzzle.
			if c := reward[0]; c == '-' || (c >= '0' && c <= '9') {
				return nil, "", fmt.Errorf("reward is %.80s: want a number within a float64's range", reward)
			}
			return nil, "", fmt.Errorf("reward is %.80s: want a number", reward)
		}
		r = &f
	}
	var e string
	if len(errField) > 0 && json.Unmarshal(errField, &e) != nil {
		return nil, "", fmt.Errorf("error is %.80s: want a string (the episode's failure) or null", errField)
	}
	return r, e, nil
}

// errNoGroup: the group to close is not open.
var errNoGroup = errors.New("no open group")

// groupFields are a group's own metadata and metrics, from the close
// request's body.
type groupFields struct {
	Metadata map[string]string
	Metrics  map[string]float64
	nulls    []string // the metrics posted as null, left out of Metrics
}

// parseGroupFields reads the optional body of a close request:
// {"metadata": {...}, "metrics": {...}}. Metadata values are strings, or
// numbers and booleans (kept as their JSON text, since ART allows them);
// null leaves the key out. Metrics are numbers. Any other key is refused,
// so that a misspelt one is not silently dropped.
func parseGroupFields(raw []byte) (groupFields, error) {
	var f groupFields
	if len(bytes.TrimSpace(raw)) == 0 {
		return f, nil
	}
	var body struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
		Metrics  map[string]json.RawMessage `json:"metrics"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		if nan := nonJSONNumber(raw, err); nan != nil {
			return f, nan
		}
		return f, fmt.Errorf("%w (want {\"metadata\": {...}, \"metrics\": {...}})", err)
	}
	var err error
	if f.Metadata, err = metadataValues(body.Metadata); err != nil {
		return f, err
	}
	f.Metrics, f.nulls, err = numbers(body.Metrics)
	return f, err
}

// metadataValues reads posted metadata, of a group or of a trajectory:
// strings, or numbers and booleans kept as their JSON text (ART allows
// them); null leaves the key out. Any other value is refused naming the
// key.
func metadataValues(m map[string]json.RawMessage) (map[string]string, error) {
	var out map[string]string
	for k, v := range m {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, fmt.Errorf("metadata %q: %w", k, err)
		}
		switch x := x.(type) {
		case nil:
			continue
		case string:
			v = json.RawMessage(x)
		case float64, bool:
			v = bytes.TrimSpace(v)
		default:
			return nil, fmt.Errorf("metadata %q: want a string, number, boolean or null, not %s", k, v)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = string(v)
	}
	return out, nil
}

// trajectoryMetadata reads a reward's metadata (ART's
// Trajectory.metadata), as metadataValues does. Keys beginning "hone."
// are refused: they are reserved for Hone's stages (format/trajectory),
// and one such as hone.chat_template_kwargs, which the proxy records and
// training lays the row out under, must not be overwritten by the agent.
func trajectoryMetadata(m map[string]json.RawMessage) (map[string]string, error) {
	for k := range m {
		if strings.HasPrefix(k, "hone.") {
			return nil, fmt.Errorf("metadata %q: keys beginning \"hone.\" are reserved for Hone's own fields", k)
		}
	}
	return metadataValues(m)
}

// numbers reads posted metrics, each a number, or true or false, which
// are 1 and 0 as OpenPipe ART's Trajectory.metrics (float | int | bool)
// averages them and as hone-collect's stdio environment reads them; any
// other value is refused naming the metric. It returns the names of those
// posted as null: a null one (Python's None, "does not apply") is left
// out, as the stdio environment leaves it out: every mean over a run's
// rows (hone-inspect report, log-eval) reads a metric a row lacks as not
// reported, where 0 would pull its mean down unseen, and a 400 lost the
// reward posted with it.
func numbers(m map[string]json.RawMessage) (map[string]float64, []string, error) {
	if m == nil {
		return nil, nil, nil
	}
	out := make(map[string]float64, len(m))
	var nulls []string
	for k, v := range m {
		f, isNull, ok := trajectory.MetricValue(v)
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("metric %q is %.80s: want a number, or true or false", k, v)
		case isNull:
			nulls = append(nulls, k)
			continue
		}
		out[k] = f
	}
	return out, nulls, nil
}

// warnNull says in the log, the first time a metric of kind ("metric",
// "group metric") is posted as null, that it is left out: an agent
// sending None where a metric does not apply means it so, but one sending
// it by mistake (a grader that returned nothing) learns why the metric's
// count is short. Once per name, not once per POST.
func (p *Proxy) warnNull(kind string, names []string) {
	if len(names) == 0 {
		return
	}
	p.mu.Lock()
	var fresh []string
	for _, k := range names {
		if !p.nulls[kind+" "+k] {
			if p.nulls == nil {
				p.nulls = map[string]bool{}
			}
			p.nulls[kind+" "+k] = true
			fresh = append(fresh, k)
		}
	}
	p.mu.Unlock()
	for _, k := range fresh {
		p.o.Log.Warn("proxy: a "+kind+" was null: it is left out of the rows where it is, and means over the run count only those that report it (said once per name)", "metric", k)
	}
}

// closeGroup writes the group's file, with its own fields, and forgets it.
// When the file cannot be written the group stays open.
func (p *Proxy) closeGroup(gid string, fields groupFields) error {
	p.mu.Lock()
	flush, err := p.detachLocked(gid, fields)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	return flush()
}

// detachLocked takes the open group gid out of the proxy, with p.mu held,
// and returns what writes its file (without the lock); errNoGroup when it
// is not open. A caller that found the group under the same lock (the
// reward that fills it) so closes it without a window in which another
// close could take it first.
func (p *Proxy) detachLocked(gid string, fields groupFields) (flush func() error, err error) {
	g := p.groups[gid]
	if g == nil {
		return nil, fmt.Errorf("%w %q", errNoGroup, gid)
	}
	delete(p.groups, gid)
	p.files++
	name := fileset.Join(p.o.OutDir, fmt.Sprintf("%s-%06d.parquet", p.o.Run, p.files))
	p.flushed[gid] = name
	for id := range g.trajs {
		p.written[id] = name
	}
	out := trajectory.Group{ID: gid, Metadata: fields.Metadata, Metrics: fields.Metrics}
	// The attempts of a group run concurrently: their rows come in the
	// order of their first requests, not of their first answers.
	order := slices.Clone(g.order)
	slices.SortStableFunc(order, func(a, b string) int { return g.trajs[a].t.StartedAt.Compare(g.trajs[b].t.StartedAt) })
	for _, id := range order {
		rec := g.trajs[id]
		t := rec.finish()
		if !rec.closed {
			t.Error = strings.TrimPrefix(t.Error+"; not closed", "; ")
		}
		out.Trajectories = append(out.Trajectories, t)
	}
	p.wg.Add(1)
	return func() error {
		defer p.wg.Done()
		// WriteFile is atomic itself (a temporary name, renamed when whole).
		if err := trajectory.WriteFile(context.Background(), name, []trajectory.Group{out}, trajectory.WriterOptions{}); err != nil {
			// Nothing was written: the group stays open, as it was, so
			// that closing it again (once the output is writable) writes it.
			p.mu.Lock()
			delete(p.flushed, gid)
			for id := range g.trajs {
				delete(p.written, id)
			}
			p.groups[gid] = g
			p.mu.Unlock()
			return fmt.Errorf("flush group %s: %w (the group stays open: close it again)", gid, err)
		}
		p.o.Log.Info("proxy: group flushed", "group", gid, "trajectories", len(out.Trajectories), "file", name)
		return nil
	}, nil
}

// refuseSelf refuses an upstream that names the address the proxy listens
// on. The agent's own OPENAI_BASE_URL, which hone-collect proxy takes as
// its default upstream, points at the proxy: a proxy started in that shell
// forwarded each request back to itself, each forward another connection,
// until it ran out of file descriptors while the agent's call hung. The
// upstream's host is resolved (localhost is 127.0.0.1 too); a listener on
// every interface is reached by any of this machine's addresses. A host
// that does not resolve is let through: its requests fail as 502s.
func refuseSelf(ctx context.Context, o Options, bound net.Addr) error {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return nil
	}
	u, err := url.Parse(o.Upstream)
	if err != nil {
		return nil // flagval.BaseURL checked it at start
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != strconv.Itoa(tcp.Port) {
		return nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, u.Hostname())
	if err != nil {
		return nil
	}
	var local []net.Addr
	if tcp.IP.IsUnspecified() {
		local, _ = net.InterfaceAddrs() // without them, loopback alone is known to be this machine
	}
	for _, ip := range ips {
		if ip.IP.Equal(tcp.IP) || tcp.IP.IsUnspecified() && (ip.IP.IsLoopback() || hasIP(local, ip.IP)) {
			from := o.UpstreamFrom
			if from == "" {
				from = "--upstream"
			}
			return stageerr.Usagef("proxy: upstream %s (%s) is this proxy itself, listening on %s: every request would be forwarded back to it; give --upstream the server's URL (hone-serve, vLLM), e.g. --upstream http://127.0.0.1:8000/v1",
				urlmask.Shown(o.Upstream), from, bound)
		}
	}
	return nil
}

// mkdirNew makes dir and the parents it lacks, as os.MkdirAll does, and
// returns the topmost folder it made ("" when dir was there), for
// removeMade to take back.
func mkdirNew(dir string) (string, error) {
	made := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		made = d
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return made, nil
}

// removeMade removes dir and its parents up to made (the topmost folder
// mkdirNew made), each only while it is empty: a refused start leaves
// nothing it made, but never a file that another process put there in
// the meantime. A folder that cannot be removed stops it, unsaid: it is
// cleanup on a path that already failed.
func removeMade(dir, made string) {
	if made == "" {
		return
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if os.Remove(d) != nil || d == made || filepath.Dir(d) == d {
			return
		}
	}
}

// hasIP reports whether ip is one of the interface addresses addrs.
func hasIP(addrs []net.Addr, ip net.IP) bool {
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// Run serves until ctx ends, then waits for requests in flight (up to
// DrainTimeout: then they are cut off, and Run returns an error wrapping
// context.DeadlineExceeded) and for flushes. Groups never closed are not
// written.
func Run(ctx context.Context, o Options) error {
	p, err := start(ctx, o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		removeMade(p.o.OutDir, p.made)
		return fmt.Errorf("proxy: %w", err)
	}
	if err := refuseSelf(ctx, o, ln.Addr()); err != nil {
		ln.Close()
		removeMade(p.o.OutDir, p.made)
		return err
	}
	if o.OnListen != nil {
		o.OnListen(ln.Addr().String())
	}
	if w := upstreamCredentials(o); w != "" {
		p.o.Log.Warn(w)
	}
	// Masked: a password or token in the userinfo would be in every run's log.
	p.o.Log.Info("hone-collect proxy listening", "addr", ln.Addr().String(), "upstream", urlmask.Shown(o.Upstream))
	srv := &http.Server{Handler: p}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	p.o.Log.Info("hone-collect proxy draining", "timeout", p.o.DrainTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), p.o.DrainTimeout)
	defer cancel()
	var derr error
	if err := srv.Shutdown(sctx); err != nil {
		// Said before they are cut off: otherwise the process ends
		// "interrupted" with no word that answers were lost.
		p.o.Log.Warn("proxy: drain timed out: closing the connections of the requests still in flight (their turns are not recorded)",
			"in_flight", p.active.Load(), "err", err)
		srv.Close()
		derr = fmt.Errorf("proxy: drain: %w", err)
	}
	p.wg.Wait()
	p.mu.Lock()
	open := len(p.groups)
	p.mu.Unlock()
	if open > 0 {
		p.o.Log.Warn("proxy: groups never closed were not written", "groups", open)
	}
	return derr
}
