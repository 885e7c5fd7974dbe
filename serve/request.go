package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reading request bodies: 400s that name the JSON field at fault and the
// JSON type it wants, never a Go type.

// readJSON decodes the request body into v: 413 past the size cap, 400 for
// malformed JSON, invalid UTF-8 in any string (encoding/json would quietly
// turn it into U+FFFD) or wrong-typed fields. A body with a Content-Length
// is read into one buffer of that size, not into one grown step by step,
// which would allocate several times the body; one declared over the cap
// is refused unread. It returns the body's top-level fields that v has no
// place for (ignoredFields), which the request is answered without.
func (s *Server) readJSON(r *http.Request, v any) ([]string, error) {
	if err := jsonContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	if r.ContentLength > s.o.MaxBodyBytes { // refused unread
		return nil, tooLarge(s.o.MaxBodyBytes)
	}
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(mbe.Limit)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// The body stopped coming before the request's deadline
			// (Server.track): the client's fault, not a malformed body.
			return nil, &httpError{status: http.StatusRequestTimeout, typ: "invalid_request_error", code: "request_timeout",
				msg: "the request body did not arrive within the request deadline (--request-timeout)"}
		}
		return nil, badRequest("", "reading the request body: %v", err)
	}
	b := buf.Bytes()
	err := json.Unmarshal(b, v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, badRequest("", "request body is not valid JSON: %v (at byte %d)", se, se.Offset)
	}
	if !utf8.Valid(b) {
		return nil, invalidUTF8(b)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return nil, typeError(b, te)
	}
	if err != nil {
		return nil, badRequest("", "request body: %v", err)
	}
	return ignoredFields(b, reflect.TypeOf(v)), nil
}

// jsonContentType refuses a body declared as another media type than
// application/json (a form, as curl -d sends without -H), with the 400
// vLLM answers (its RequestValidationError), before any of it is read: it
// was not written as the JSON it would be parsed as. Parameters (charset)
// and case do not matter, and a request with no Content-Type is read as
// JSON, which clients that send a bare body rely on.
func jsonContentType(ct string) error {
	if ct == "" {
		return nil
	}
	// As vLLM compares: the media type before any ";", whatever follows.
	mt, _, _ := strings.Cut(ct, ";")
	if strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return nil
	}
	return badRequest("", "Unsupported Media Type %q: only 'application/json' is allowed", ct)
}

// ignoredFields lists, sorted, the top-level keys of the JSON object b that
// match no field of the struct type t points to (encoding/json matches
// names without regard to case, and so does this): OpenAI's or vLLM's
// parameters this server does not read (spaces_between_special_tokens, …),
// which the handler reports rather than answering as if they had applied.
func ignoredFields(b []byte, t reflect.Type) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil
	}
	known := map[string]bool{}
	jsonNames(t.Elem(), known)
	var out []string
	for k := range top {
		if !known[strings.ToLower(k)] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// jsonNames adds the lower-cased JSON names of struct type t's fields,
// those of embedded structs included, to names.
func jsonNames(t reflect.Type, names map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			jsonNames(f.Type, names)
		case tag != "":
			names[strings.ToLower(tag)] = true
		case f.IsExported():
			names[strings.ToLower(f.Name)] = true
		}
	}
}

func tooLarge(limit int64) error {
	return &httpError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
		msg: fmt.Sprintf("request body is larger than %d bytes (--max-body-bytes)", limit)}
}

// invalidUTF8 is the 400 for a body that is valid JSON but not valid
// UTF-8, naming the string that holds the first bad byte. (A \ud800-style
// escape of a lone surrogate is valid UTF-8 text and decodes to U+FFFD, as
// encoding/json does; it is accepted.)
func invalidUTF8(b []byte) error {
	bad := 0
	for bad < len(b) {
		r, n := utf8.DecodeRune(b[bad:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		bad += n
	}
	where, what := "", "not valid UTF-8"
	walkJSON(b, func(n jsonNode) bool {
		if n.end <= int64(bad) {
			return true
		}
		if n.key { // name the object that holds the key
			n.frames, what = n.frames[:len(n.frames)-1], "an object key is not valid UTF-8"
		}
		where = n.path()
		return false
	})
	return badRequest(where, "%s: %s (at byte %d)", orBody(where), what, bad+1)
}

// typeError is the 400 for a JSON value of the wrong type: encoding/json's
// error names the Go field path without array indices, so the body is
// walked for the first value on that path of the type it complained about.
func typeError(b []byte, te *json.UnmarshalTypeError) error {
	field := strings.TrimPrefix(te.Field, "samplingFields.")
	var want []string
	if field != "" {
		want = strings.Split(field, ".")
	}
	kind, lit, _ := strings.Cut(te.Value, " ")
	where := field
	walkJSON(b, func(n jsonNode) bool {
		if n.key || n.kind != kind || (lit != "" && n.lit != lit) || !n.onPath(want) {
			return true
		}
		where = n.path()
		return false
	})
	got := kindPhrase(kind)
	if lit != "" {
		got = lit
	}
	return badRequest(where, "%s: expected %s, got %s", orBody(where), jsonTypeName(te.Type), got)
}

func orBody(path string) string {
	if path == "" {
		return "the request body"
	}
	return path
}

// jsonTypeName says which JSON value a Go type takes.
func jsonTypeName(t reflect.Type) string {
	if t == reflect.TypeFor[stringList]() {
		return "a string or an array of strings"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return fmt.Sprintf("a %d-bit integer", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a non-negative %d-bit integer", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a different JSON value"
}

// jsonNode is one value (or object key) met by walkJSON.
type jsonNode struct {
	frames []jsonFrame // the containers it is in, outermost first
	key    bool        // an object key, not a value
	kind   string      // string, number, bool, null, array, object (as json.UnmarshalTypeError.Value says)
	lit    string      // a number's text
	end    int64       // the byte offset just past it (past the bracket for a container)
}

type jsonFrame struct {
	obj     bool
	key     string // obj: the current key
	wantKey bool   // obj: the next token is a key
	index   int    // array: the current element
}

// path spells the node's place: messages[2].content.
func (n jsonNode) path() string {
	var b strings.Builder
	for _, f := range n.frames {
		if !f.obj {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(clip(f.key, 64))
	}
	return b.String()
}

// onPath reports whether the object keys on the way to n are keys (array
// levels skipped), matched as encoding/json matches them: case-insensitively.
func (n jsonNode) onPath(keys []string) bool {
	i := 0
	for _, f := range n.frames {
		if !f.obj {
			continue
		}
		if i == len(keys) || !strings.EqualFold(f.key, keys[i]) {
			return false
		}
		i++
	}
	return i == len(keys)
}

// walkJSON calls visit on every value and key of the JSON document b in
// order, until visit returns false or the document ends or breaks.
func walkJSON(b []byte, visit func(jsonNode) bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []jsonFrame
	next := func() { // past a value: the parent moves on
		if len(stack) > 0 {
			if top := &stack[len(stack)-1]; top.obj {
				top.wantKey = true
			} else {
				top.index++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil { // io.EOF at the end
			return
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			next()
			continue
		}
		if len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKey {
			top := &stack[len(stack)-1]
			top.key, top.wantKey = tok.(string), false
			if !visit(jsonNode{frames: stack, key: true, kind: "string", end: dec.InputOffset()}) {
				return
			}
			continue
		}
		n := jsonNode{frames: stack, end: dec.InputOffset()}
		switch t := tok.(type) {
		case json.Delim:
			n.kind = map[json.Delim]string{'{': "object", '[': "array"}[t]
		case string:
			n.kind = "string"
		case json.Number:
			n.kind, n.lit = "number", string(t)
		case bool:
			n.kind = "bool"
		case nil:
			n.kind = "null"
		}
		if !visit(n) {
			return
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, jsonFrame{obj: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, jsonFrame{})
		default:
			next()
		}
	}
}

// clip shortens s to at most n bytes (on a character boundary) and marks
// the cut, for echoing client text in errors.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
