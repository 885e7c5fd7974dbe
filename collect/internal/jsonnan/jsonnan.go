// Package jsonnan finds where a JSON syntax error is a NaN, Infinity or
// -Infinity value, as Python's json.dumps writes float('nan') and
// float('inf') by default, and names the field holding it: the recording
// proxy's request bodies and the stdio environment's responses word that
// error alike.
package jsonnan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Find reports whether err, from decoding raw, failed at a NaN, Infinity
// or -Infinity where a value goes, and then the field's path (reward,
// metrics["acc"], a[2]; "the body" for the whole text) and the word.
// encoding/json's "invalid character 'N' looking for beginning of value"
// names neither.
func Find(raw []byte, err error) (path, word string, ok bool) {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return "", "", false
	}
	// Offset is past the byte that failed: N or I, after the '-' of
	// -Infinity, which the scanner took as a number's start.
	at := int(se.Offset) - 1
	if at < 0 || at >= len(raw) {
		return "", "", false
	}
	if at > 0 && raw[at-1] == '-' {
		at--
	}
	for _, w := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(raw[at:], []byte(w)) {
			word = w
		}
	}
	if word == "" {
		return "", "", false
	}
	// The letters alone do not make a NaN value: "\NaN" in a string (a
	// bad escape), a NaN where an object key goes or after a value with
	// no comma fail at the same bytes, and naming a field as NaN there
	// would send the sender to the wrong fix.
	path, ok = pathBefore(raw[:at])
	if !ok {
		return "", "", false
	}
	return path, word, true
}

// pathBefore is the path of the value that starts where prefix, a JSON
// text cut short there, ends: reward, metrics["acc"], a[2]. atValue is
// false when prefix does not end where a value may start (inside a
// string, where an object key goes, right after a value).
func pathBefore(prefix []byte) (path string, atValue bool) {
	type frame struct {
		object bool
		key    string // the object's key whose value comes next
		keyed  bool   // key was read, its value not yet
		index  int    // the array's elements read so far
	}
	var stack []frame
	dec := json.NewDecoder(bytes.NewReader(prefix))
	// A number too large for a float64 (Python writes 10**400 in full)
	// is an error as a float64 and would stop the walk at its own key.
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, frame{object: tok == json.Delim('{')})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				top = &stack[len(stack)-1]
			} else {
				top = nil
			}
		default:
			if top != nil && top.object && !top.keyed {
				top.key, top.keyed = tok.(string), true
				continue
			}
		}
		// A value (scalar, or a closed object or array) was read: the
		// frame holding it moves past it.
		if top != nil {
			if top.object {
				top.keyed = false
			} else {
				top.index++
			}
		}
	}
	// A value starts the text or follows ':', '[' or an array's ','; an
	// object's ',' is followed by a key.
	rest := bytes.TrimRight(prefix, " \t\r\n")
	if len(rest) > 0 && !bytes.ContainsAny(rest[len(rest)-1:], ":[,") {
		return "", false
	}
	if len(stack) > 0 && stack[len(stack)-1].object && !stack[len(stack)-1].keyed {
		return "", false
	}
	// From the innermost level out, and only as far as cut keeps: built
	// from the top, the path was copied once per level, quadratic in the
	// depth (200 MB for a 45 kB body 9,000 levels deep).
	var parts []string
	n := 0
	for i := len(stack) - 1; i >= 0 && n <= maxPath; i-- {
		f := stack[i]
		var p string
		switch {
		case f.object && i == 0 && plainName(f.key):
			p = f.key
		case f.object:
			p = "[" + strconv.Quote(f.key) + "]"
		default:
			p = "[" + strconv.Itoa(f.index) + "]"
		}
		parts = append(parts, p)
		n += len(p)
	}
	if len(parts) == 0 {
		return "the body", true
	}
	slices.Reverse(parts)
	return cut(strings.Join(parts, "")), true
}

// maxPath bounds the path in bytes: it goes into a 400's body and a row's
// error, and a value 9,000 levels deep, or under a key of megabytes,
// would make that message as long.
const maxPath = 200

// cut keeps the last maxPath bytes of path, whole runes, after "…" (the
// part nearest the value says most of which it is).
func cut(path string) string {
	if len(path) <= maxPath {
		return path
	}
	const mark = "…"
	from := len(path) - (maxPath - len(mark))
	for from < len(path) && !utf8.RuneStart(path[from]) {
		from++
	}
	return mark + path[from:]
}

// plainName reports whether a top-level key reads as itself (reward,
// metrics, _x1): any other is quoted, as "a.b" would read as b of a.
func plainName(key string) bool {
	for i, r := range key {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && (i == 0 || !(r >= '0' && r <= '9')) {
			return false
		}
	}
	return key != ""
}
