// Package exactjson decodes a JSON object into a struct by its keys' exact
// names. The configuration files Hone reads from other tools
// (config.json, generation_config.json, adapter_config.json) are read
// there as Python dicts, where "Rope_Theta" or "USE_RSLORA" is a key of
// its own that nothing reads; encoding/json matches struct fields case-
// insensitively and lets such a key fill the field, or win over the real
// key written before it, so the same file would mean another model here.
package exactjson

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Unmarshal decodes the JSON object data into the struct v points to,
// reading each exported field only from the key its json tag (or, without
// one, its Go name) spells exactly; other keys are ignored. A key given
// twice keeps its last value, as Python's json module and encoding/json do.
func Unmarshal(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("exactjson: want a pointer to a struct, got %v", t)
	}
	// Python opens these files as UTF-8 text and fails on a byte that is
	// not; encoding/json would read it as U+FFFD, so a name in the file
	// would come out as another string here than anywhere else.
	if !utf8.Valid(data) {
		return fmt.Errorf("not valid UTF-8 at byte %d", firstInvalid(data))
	}
	var kv map[string]json.RawMessage
	if err := json.Unmarshal(data, &kv); err != nil {
		return err
	}
	known := names(t.Elem())
	for k := range kv {
		if !known[k] {
			delete(kv, k)
		}
	}
	exact, err := json.Marshal(kv)
	if err != nil {
		return err
	}
	return json.Unmarshal(exact, v)
}

// names returns the JSON keys of struct type t's exported fields.
func names(t reflect.Type) map[string]bool {
	known := map[string]bool{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		known[name] = true
	}
	return known
}

// firstInvalid returns the offset of the first byte of data that does not
// begin a valid UTF-8 sequence (len(data) when all do).
func firstInvalid(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// MaxFileSize bounds the config files ReadFile reads (JSON configs, and
// the chat templates beside them). The largest such file Hone reads, the
// index of a checkpoint of ~100k tensors, is a few MB; a file far past it
// is a weights file under a config's name or a corrupt write, to be
// refused before it is read into memory.
const MaxFileSize = 64 << 20

// ReadFile reads the config file at path, refusing one of more than
// MaxFileSize bytes with an error naming its size. An error opening the
// file is returned as it is (errors.Is(err, fs.ErrNotExist) holds for a
// missing file).
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a config file may be (is it the right file?)", path, st.Size(), MaxFileSize)
	}
	// A file that grew since the Stat, or a pipe, is bounded all the same.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s is more than the %d bytes a config file may be (is it the right file?)", path, MaxFileSize)
	}
	return b, nil
}
