// Package inbox is an email-research task in the style of ART·E: a
// deterministic synthetic inbox (people, threads, dates, facts with
// near-miss distractors) is stored in a SQLite database with an FTS5
// full-text index, and each scenario asks a question whose answer is in
// one email. The agent has three tools: search_inbox, read_email and
// return_final_answer.
//
// Reward (in [0, 1]): 0.7 for a correct answer (the expected string
// appears in it, case-insensitively, and no answer of the inbox's other
// questions of its kind does: a list of every room, code or date that
// could be it is no answer), plus 0.1 each for finding the source email in
// a search, reading it, and citing it among the sources, every one of which
// the agent read (citing every id of the inbox unread is no citation). A
// reply without a tool call counts as a final answer without sources.
// Metrics:
// correct, found_source, read_source, cited_source, searches, reads,
// answered.
//
// Settings (hone-collect --env-opt): inbox-seed=N picks the inbox (1 by
// default; replayed scenarios need the seed they were made with: a
// generated question whose answer is not in its source email is refused);
// db=PATH keeps the database at PATH, for a look at it with
// sqlite3, instead of a temporary file. An existing file at PATH is
// rebuilt only if it is an inbox database Hone built; any other file is
// refused and left as it is (Open).
package inbox

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver, with FTS5

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Env is the inbox environment over one generated inbox.
type Env struct {
	seed   int64 // inbox-seed, named when a scenario is of another inbox
	inbox  Inbox
	db     *sql.DB
	tmpDir string // removed by Close when the database is temporary
}

// Open generates the inbox for seed and stores it in the SQLite database
// at path; "" uses a temporary file, removed by Close. A file already at
// path is replaced only when it is an inbox database Hone built (marked by
// its SQLite application_id), the inbox being a function of its seed;
// any other file (the user's own database, a typo) is refused, never
// overwritten. The database is built in a temporary folder and written to
// path as an output is (fileset.Create), so a build that fails or is
// stopped leaves path as it was.
func Open(ctx context.Context, seed int64, path string) (*Env, error) {
	if path != "" {
		if err := replaceable(path); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "hone-inbox-*")
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	e := &Env{seed: seed, inbox: Generate(seed), tmpDir: dir}
	built, name := filepath.Join(dir, "inbox.db"), path
	if name == "" {
		name = built
	}
	if err := e.build(ctx, built); err != nil {
		e.Close()
		return nil, fmt.Errorf("inbox: build %s: %w", name, err)
	}
	if path == "" {
		path = built
	} else {
		if err := publish(ctx, built, path); err != nil {
			e.Close()
			return nil, err
		}
		os.RemoveAll(dir)
		e.tmpDir = ""
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("inbox: open %s: %w", path, err)
	}
	e.db = db
	return e, nil
}

// publish copies the database built at from to path, in place at once.
func publish(ctx context.Context, from, path string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	defer in.Close()
	out, err := fileset.Create(ctx, path)
	if err != nil {
		return fmt.Errorf("inbox: db=%s: %w", path, err)
	}
	defer out.Abort()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("inbox: write db=%s: %w", path, err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("inbox: write db=%s: %w", path, err)
	}
	return nil
}

// appID is the SQLite application_id of the inbox databases Hone builds
// ("HonI"): Open replaces a file at its path only when it carries it.
const appID = 0x486f6e49

// replaceable refuses an existing file at path that is not an inbox
// database Hone built, read from the SQLite header (the magic string,
// then the application_id at offset 68, big-endian) rather than by
// opening it as a database, which would write to it. The error says what
// the file is: a folder, an SQLite database without the mark (which the
// inbox databases of a Hone from before the mark are too: the user may
// remove those), or some other file; it is marked stageerr.ErrUsage, since
// the db= setting names it.
func replaceable(path string) error {
	return stageerr.Usage(checkReplaceable(path))
}

func checkReplaceable(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inbox: db=%s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return fmt.Errorf("inbox: db=%s is a folder; name a file", path)
	}
	var h [72]byte
	_, err = io.ReadFull(f, h[:])
	switch {
	case err != nil || string(h[:16]) != "SQLite format 3\x00":
		return fmt.Errorf("inbox: db=%s exists and is not an SQLite database; it is left as it is: remove it or name another path", path)
	case binary.BigEndian.Uint32(h[68:]) != appID:
		return fmt.Errorf("inbox: db=%s is an SQLite database without the mark of the inbox databases Hone builds (application_id %#x); it is left as it is, since it may be your own: remove it if it is an inbox database of an earlier Hone, which had no mark, or name another path", path, appID)
	}
	return nil
}

// build writes the inbox into a new database at path.
func (e *Env) build(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	return errors.Join(load(ctx, db, e.inbox), db.Close())
}

func load(ctx context.Context, db *sql.DB, ib Inbox) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE VIRTUAL TABLE emails USING fts5(
		id UNINDEXED, thread UNINDEXED, sender, recipient, date UNINDEXED, subject, body)`); err != nil {
		return err
	}
	// Marks the file as Hone's inbox, which a later Open may replace.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", appID)); err != nil {
		return err
	}
	for _, m := range ib.Emails {
		if _, err := tx.ExecContext(ctx, `INSERT INTO emails VALUES (?,?,?,?,?,?,?)`, m.ID, m.Thread, m.From, m.To, m.Date, m.Subject, m.Body); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Close releases the database (and removes a temporary one).
func (e *Env) Close() error {
	var err error
	if e.db != nil {
		err = e.db.Close()
	}
	if e.tmpDir != "" {
		os.RemoveAll(e.tmpDir)
	}
	return err
}

// Inbox returns the generated inbox.
func (e *Env) Inbox() Inbox { return e.inbox }

// SearchResult is one hit of search_inbox.
type SearchResult struct {
	ID      string `json:"id"`
	Date    string `json:"date"`
	From    string `json:"from"`
	Subject string `json:"subject"`
	Snippet string `json:"snippet"`
}

// Search runs a full-text query: every keyword must match (FTS5 phrase
// per keyword), best matches first, at most limit. A keyword without a
// letter or digit ("?", "-") is passed over: the index holds no
// punctuation, so its phrase is empty and matched no email, which emptied
// the whole search for the model's other keywords.
func (e *Env) Search(ctx context.Context, keywords []string, limit int) ([]SearchResult, error) {
	var terms []string
	for _, k := range keywords {
		if strings.IndexFunc(k, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0 {
			terms = append(terms, `"`+strings.ReplaceAll(strings.TrimSpace(k), `"`, `""`)+`"`)
		}
	}
	if len(terms) == 0 {
		return nil, errors.New("no keywords: give at least one with a letter or digit")
	}
	rows, err := e.db.QueryContext(ctx, `SELECT id, date, sender, subject, snippet(emails, 6, '', '', '…', 12)
		FROM emails WHERE emails MATCH ? ORDER BY rank LIMIT ?`, strings.Join(terms, " AND "), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SearchResult
	for rows.Next() {
		var r SearchResult
		if err := rows.Scan(&r.ID, &r.Date, &r.From, &r.Subject, &r.Snippet); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Read returns one email, or an error naming the id.
func (e *Env) Read(ctx context.Context, id string) (Email, error) {
	var m Email
	err := e.db.QueryRowContext(ctx, `SELECT id, thread, sender, recipient, date, subject, body FROM emails WHERE id = ?`, id).
		Scan(&m.ID, &m.Thread, &m.From, &m.To, &m.Date, &m.Subject, &m.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("no email with id %q", id)
	}
	return m, err
}

// tools are the tools offered in every episode; each episode gets its own
// copy of the list.
var tools = []trajectory.Tool{
	{Type: "function", Name: "search_inbox", Description: "Full-text search of the inbox; every keyword must match. Returns id, date, sender, subject and a snippet per email.",
		Parameters: `{"type":"object","properties":{"keywords":{"type":"array","items":{"type":"string"}},"max_results":{"type":"integer"}},"required":["keywords"]}`},
	{Type: "function", Name: "read_email", Description: "Read one email by its id.",
		Parameters: `{"type":"object","properties":{"message_id":{"type":"string"}},"required":["message_id"]}`},
	{Type: "function", Name: "return_final_answer", Description: "Give the final answer and the ids of the emails it comes from. Ends the task.",
		Parameters: `{"type":"object","properties":{"answer":{"type":"string"},"sources":{"type":"array","items":{"type":"string"}}},"required":["answer","sources"]}`},
}

const systemPrompt = "You answer questions about the user's email inbox. Use search_inbox and read_email to find the answer, then call return_final_answer with the answer and the ids of the emails it comes from."

// Name implements env.Env.
func (e *Env) Name() string { return "inbox" }

// RewardRange implements env.Env.
func (e *Env) RewardRange() (float64, float64) { return 0, 1 }

// Scenarios implements env.Env: the inbox's questions in an order drawn
// from seed; past the pool they repeat with a new id.
func (e *Env) Scenarios(_ context.Context, seed int64, n int) ([]env.Scenario, error) {
	qs := e.inbox.Questions
	order := make([]int, len(qs))
	for i := range order {
		order[i] = i
	}
	r := uint64(seed)*6364136223846793005 + 1442695040888963407
	for i := len(order) - 1; i > 0; i-- { // Fisher–Yates with an LCG, stable across Go versions
		r = r*6364136223846793005 + 1442695040888963407
		j := int((r >> 33) % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	out := make([]env.Scenario, n)
	for i := range out {
		q := qs[order[i%len(qs)]]
		p, _ := json.Marshal(q)
		out[i] = env.Scenario{ID: fmt.Sprintf("inbox-%s-%d", q.ID, i/len(qs)), Env: "inbox", Payload: p, Split: trajectory.SplitTrain}
	}
	return out, nil
}

// NewEpisode implements env.Env.
func (e *Env) NewEpisode(_ context.Context, sc env.Scenario, _ int64) (env.Episode, error) {
	var q Question
	if err := json.Unmarshal(sc.Payload, &q); err != nil || q.Question == "" || q.Answer == "" || q.SourceID == "" {
		return nil, fmt.Errorf("inbox: scenario %s: payload needs question, answer and source_id (%v)", sc.ID, err)
	}
	// found, read and cited are scored against it: a source the inbox
	// lacks would score 0 for any answer.
	k := slices.IndexFunc(e.inbox.Emails, func(m Email) bool { return m.ID == q.SourceID })
	if k < 0 {
		return nil, fmt.Errorf("inbox: scenario %s: source_id %q is no email of this inbox (its seed makes ids like %q)", sc.ID, q.SourceID, e.inbox.Emails[0].ID)
	}
	// A generated question (one that names its kind) has its answer in its
	// source. Ids are m0001… in every inbox, so one generated for another
	// inbox-seed passed the check above and scored 0 for any answer.
	if q.Kind != "" && !strings.Contains(strings.ToLower(e.inbox.Emails[k].Body), strings.ToLower(q.Answer)) {
		return nil, fmt.Errorf("inbox: scenario %s: answer %q is not in its source %s of this inbox (inbox-seed=%d): a question of another inbox? give the --env-opt inbox-seed it was made with", sc.ID, q.Answer, q.SourceID, e.seed)
	}
	return &episode{e: e, q: q, rivals: e.rivals(q), readIDs: map[string]bool{}}, nil
}

// rivals are the answers, lower-cased, of the inbox's other questions of
// q's kind (the kind of the inbox's question with q's source, when q names
// none): an answer holding one of them besides q's hedges between
// candidates. One that holds q's answer (a repeated room) is no rival.
func (e *Env) rivals(q Question) []string {
	kind := q.Kind
	for _, iq := range e.inbox.Questions {
		if kind == "" && iq.SourceID == q.SourceID {
			kind = iq.Kind
		}
	}
	if kind == "" {
		return nil
	}
	want := strings.ToLower(q.Answer)
	var out []string
	for _, iq := range e.inbox.Questions {
		if a := strings.ToLower(iq.Answer); iq.Kind == kind && !strings.Contains(want, a) {
			out = append(out, a)
		}
	}
	return out
}

type episode struct {
	e                  *Env
	q                  Question
	rivals             []string        // other questions' answers of q's kind (rivals)
	readIDs            map[string]bool // the emails read
	searches, reads    int
	found, read, cited bool
	answered, correct  bool
}

func (ep *episode) Reset(context.Context) (env.Observation, error) {
	return env.Observation{
		Messages: []trajectory.Message{{Role: "system", Content: systemPrompt}, env.User(ep.q.Question)},
		Tools:    slices.Clone(tools),
	}, nil
}

func (ep *episode) answer(text string, sources []string) {
	ep.answered = true
	text = strings.ToLower(text)
	ep.correct = strings.Contains(text, strings.ToLower(ep.q.Answer)) &&
		!slices.ContainsFunc(ep.rivals, func(a string) bool { return strings.Contains(text, a) })
	ep.cited = slices.Contains(sources, ep.q.SourceID) &&
		!slices.ContainsFunc(sources, func(id string) bool { return !ep.readIDs[id] })
}

func (ep *episode) Step(ctx context.Context, t env.Turn) (env.Feedback, error) {
	if len(t.Message.ToolCalls) == 0 {
		ep.answer(t.Message.Content, nil)
		return env.Feedback{Done: true}, nil
	}
	var out []trajectory.Message
	for _, c := range t.Calls {
		var args struct {
			Keywords   []string `json:"keywords"`
			MaxResults int      `json:"max_results"`
			MessageID  string   `json:"message_id"`
			Answer     string   `json:"answer"`
			Sources    []string `json:"sources"`
		}
		json.Unmarshal([]byte(c.Arguments), &args) // CheckCall already validated it
		var result string
		switch c.Name {
		case "search_inbox":
			ep.searches++
			limit := args.MaxResults
			if limit <= 0 || limit > 10 {
				limit = 10
			}
			rs, err := ep.e.Search(ctx, args.Keywords, limit)
			switch {
			case err != nil:
				result = "error: " + err.Error()
			case len(rs) == 0:
				result = "no emails match"
			default:
				for _, r := range rs {
					ep.found = ep.found || r.ID == ep.q.SourceID
				}
				b, _ := json.Marshal(rs)
				result = string(b)
			}
		case "read_email":
			ep.reads++
			m, err := ep.e.Read(ctx, args.MessageID)
			if err != nil {
				result = "error: " + err.Error()
			} else {
				ep.read = ep.read || m.ID == ep.q.SourceID
				ep.readIDs[m.ID] = true
				b, _ := json.Marshal(m)
				result = string(b)
			}
		case "return_final_answer":
			ep.answer(args.Answer, args.Sources)
			return env.Feedback{Messages: append(out, env.ToolResult(c.ID, c.Name, "answer recorded")), Done: true}, nil
		}
		out = append(out, env.ToolResult(c.ID, c.Name, result))
	}
	return env.Feedback{Messages: out}, nil
}

func (ep *episode) Outcome() env.Outcome {
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	// Counted in tenths and divided once: summed as floats, 0.7 + 0.1 +
	// 0.1 + 0.1 is 0.9999999999999999, and a perfect episode fell below a
	// filter at 1 (hone-train sft --min-reward 1).
	r := (7*b(ep.correct) + b(ep.found) + b(ep.read) + b(ep.cited)) / 10
	return env.Outcome{Reward: r, Metrics: map[string]float64{
		"correct": b(ep.correct), "found_source": b(ep.found), "read_source": b(ep.read), "cited_source": b(ep.cited),
		"searches": float64(ep.searches), "reads": float64(ep.reads), "answered": b(ep.answered),
	}}
}

func (ep *episode) Close() error { return nil }
