package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// added says which of the fields the proxy asks upstream for, to record
// them, the agent did not ask for itself: those are taken out of the
// answer before it reaches the agent, which gets what upstream would have
// sent it without the proxy in between. The recorded turn keeps them.
type added struct {
	logprobs bool // choices[].logprobs (set to null, as upstream sends it unasked)
	tokenIDs bool // choices[].token_ids and prompt_token_ids (left out)
}

// addedFor is what the proxy adds to the agent's request req: an agent
// that sent "logprobs": true or "return_token_ids": true gets those as
// upstream sends them.
func addedFor(req map[string]json.RawMessage) added {
	asked := func(k string) bool { return string(bytes.TrimSpace(req[k])) == "true" }
	return added{logprobs: !asked("logprobs"), tokenIDs: !asked("return_token_ids")}
}

// strip returns a chat completion, or one chunk of a streamed one, without
// the fields a adds, the rest byte for byte as upstream wrote it. A body
// that is not a JSON object (an error event, [DONE]) is returned as it is.
func (a added) strip(body []byte) []byte {
	if !a.logprobs && !a.tokenIDs {
		return body
	}
	out, err := editObject(body, func(key string, val []byte) ([]byte, bool) {
		switch {
		case key == "prompt_token_ids" && a.tokenIDs:
			return nil, false
		case key == "choices":
			if v, err := editArray(val, a.stripChoice); err == nil {
				return v, true
			}
		}
		return val, true
	})
	if err != nil {
		return body
	}
	return out
}

// stripChoice is strip for one element of choices.
func (a added) stripChoice(ch []byte) []byte {
	out, err := editObject(ch, func(key string, val []byte) ([]byte, bool) {
		switch {
		case key == "logprobs" && a.logprobs:
			return []byte("null"), true
		case key == "token_ids" && a.tokenIDs:
			return nil, false
		}
		return val, true
	})
	if err != nil {
		return ch
	}
	return out
}

// stripEvent applies strip to the data of one whole server-sent event, as
// held (its lines with their line ends, the blank line that ends it
// included). The event's other lines stay as they are, and its data lines
// keep their places when the edited data has as many lines (else it goes
// on as many lines as it has where the first was). An event left with
// nothing for the agent is dropped: it returns nil.
func (a added) stripEvent(event []byte) []byte {
	if !a.logprobs && !a.tokenIDs {
		return event
	}
	var lines [][]byte
	for rest := event; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest) - 1
		}
		lines, rest = append(lines, rest[:i+1]), rest[i+1:]
	}
	var at []int // the data lines
	var data [][]byte
	for i, l := range lines {
		if v, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			at = append(at, i)
			data = append(data, bytes.TrimRight(bytes.TrimPrefix(v, []byte(" ")), "\r\n"))
		}
	}
	if len(at) == 0 {
		return event
	}
	joined := bytes.Join(data, []byte("\n"))
	edited := a.strip(joined)
	if bytes.Equal(edited, joined) {
		return event
	}
	if emptyChunk(edited) {
		// Upstream sent this chunk only to carry what the proxy asked for
		// (the token ids of text not yet complete, say); unasked, it
		// would not have sent it at all.
		return nil
	}
	segs := bytes.Split(edited, []byte("\n"))
	out := make([]byte, 0, len(event))
	k := 0 // data lines written
	for i, l := range lines {
		if k >= len(at) || i != at[k] {
			out = append(out, l...)
			continue
		}
		k++
		switch {
		case len(segs) == len(at): // each in its own line's place, with its prefix and end
			v := l[len("data:"):]
			prefix := l[:len(l)-len(bytes.TrimPrefix(v, []byte(" ")))]
			out = append(out, prefix...)
			out = append(out, segs[k-1]...)
			out = append(out, l[len(bytes.TrimRight(l, "\r\n")):]...)
		case k == 1:
			end := l[len(bytes.TrimRight(l, "\r\n")):]
			for _, seg := range segs {
				out = append(out, "data: "...)
				out = append(out, seg...)
				out = append(out, end...)
			}
		}
	}
	return out
}

// emptyChunk reports whether a chat completion chunk carries nothing for
// the agent: choices whose every field but the index is null, or a delta
// with nothing but nulls, and no usage.
func emptyChunk(data []byte) bool {
	var c struct {
		Usage   json.RawMessage              `json:"usage"`
		Choices []map[string]json.RawMessage `json:"choices"`
	}
	if err := json.Unmarshal(data, &c); err != nil || len(c.Choices) == 0 || !isNull(c.Usage) {
		return false
	}
	for _, ch := range c.Choices {
		for k, v := range ch {
			switch k {
			case "index":
			case "delta":
				var d map[string]json.RawMessage
				if err := json.Unmarshal(v, &d); err != nil {
					return false
				}
				for _, dv := range d {
					if !isNull(dv) {
						return false
					}
				}
			default:
				if !isNull(v) {
					return false
				}
			}
		}
	}
	return true
}

// isNull reports whether v is absent or JSON null.
func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// jsonSpan is where one member of an object or element of an array lies
// in its text: start is its first byte (a member's key), val its value's,
// end the byte after its value.
type jsonSpan struct {
	key             string
	start, val, end int
}

// editObject returns the JSON object obj with each member's value replaced
// by what edit returns for it, or the member left out where edit says not
// to keep it; everything else, whitespace included, stays as it was.
func editObject(obj []byte, edit func(key string, val []byte) ([]byte, bool)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if err := wantDelim(dec, '{'); err != nil {
		return nil, err
	}
	var spans []jsonSpan
	for dec.More() {
		off := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		// Between the previous value and the key lie only spaces and a
		// comma: the key's quote is the first '"'.
		start := off + bytes.IndexByte(obj[off:], '"')
		val, end, err := nextValue(dec, obj)
		if err != nil {
			return nil, err
		}
		spans = append(spans, jsonSpan{key: key, start: start, val: val, end: end})
	}
	if err := wantEnd(dec, obj, '}'); err != nil {
		return nil, err
	}
	return splice(obj, spans, func(s jsonSpan) ([]byte, bool) {
		v, keep := edit(s.key, obj[s.val:s.end])
		return append(append([]byte(nil), obj[s.start:s.val]...), v...), keep
	}), nil
}

// editArray returns the JSON array arr with each element replaced by what
// edit returns for it, the rest as it was.
func editArray(arr []byte, edit func(elem []byte) []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if err := wantDelim(dec, '['); err != nil {
		return nil, err
	}
	var spans []jsonSpan
	for dec.More() {
		val, end, err := nextValue(dec, arr)
		if err != nil {
			return nil, err
		}
		spans = append(spans, jsonSpan{start: val, val: val, end: end})
	}
	if err := wantEnd(dec, arr, ']'); err != nil {
		return nil, err
	}
	return splice(arr, spans, func(s jsonSpan) ([]byte, bool) { return edit(arr[s.start:s.end]), true }), nil
}

// splice rebuilds text from its spans as item makes them, dropping those
// it does not keep together with the separator before them (or, for the
// first kept, after the one dropped).
func splice(text []byte, spans []jsonSpan, item func(jsonSpan) ([]byte, bool)) []byte {
	if len(spans) == 0 {
		return text
	}
	out := append([]byte(nil), text[:spans[0].start]...)
	kept := false
	for i, s := range spans {
		b, keep := item(s)
		if !keep {
			continue
		}
		if kept {
			out = append(out, text[spans[i-1].end:s.start]...) // the separator before it
		}
		out = append(out, b...)
		kept = true
	}
	return append(out, text[spans[len(spans)-1].end:]...)
}

// nextValue decodes the next value of dec, reading text, and returns where
// it starts and ends in text.
func nextValue(dec *json.Decoder, text []byte) (val, end int, err error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, 0, err
	}
	end = int(dec.InputOffset())
	val = end - len(raw)
	if val < 0 || !bytes.Equal(text[val:end], raw) {
		return 0, 0, errors.New("value not where the decoder read it")
	}
	return val, end, nil
}

func wantDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %v, got %v", d, tok)
	}
	return nil
}

// wantEnd reads the closing delimiter d, after which text holds nothing
// but spaces.
func wantEnd(dec *json.Decoder, text []byte, d json.Delim) error {
	if err := wantDelim(dec, d); err != nil {
		return err
	}
	if len(bytes.TrimSpace(text[dec.InputOffset():])) > 0 {
		return errors.New("more after the JSON value")
	}
	return nil
}
