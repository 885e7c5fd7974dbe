package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"unicode/utf8"
)

// MaxHeaderSize is the largest JSON header accepted, the same bound the reference
// implementation uses; a larger length field is treated as a hostile or corrupt file.
const MaxHeaderSize = 100_000_000

// TensorInfo describes one tensor of a file. Begin and End are byte offsets into the
// data area (after the header), End exclusive.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int
	Begin int64
	End   int64
}

// NumElements is the product of Shape (1 for a scalar).
func (t TensorInfo) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Header is a parsed, validated safetensors header.
type Header struct {
	// Tensors in data order (ascending Begin).
	Tensors []TensorInfo
	// Metadata is the optional string→string __metadata__ map (nil when absent).
	Metadata map[string]string
	index    map[string]int
}

// Lookup returns the tensor called name.
func (h *Header) Lookup(name string) (TensorInfo, bool) {
	i, ok := h.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return h.Tensors[i], true
}

type rawEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// decodeEntry reads one tensor's object from dec as the reference reader
// (serde, in the Rust safetensors crate) reads it: its keys by their exact
// names, each at most once, other keys ignored. Decoding into rawEntry
// directly would not: encoding/json matches field names case-insensitively
// and lets a repeated key win, so {"dtype":"F32",…,"DTYPE":"I32"} would be
// F32 to PyTorch and I32 here, the same bytes read as other values.
func decodeEntry(dec *json.Decoder) (rawEntry, error) {
	var e rawEntry
	tok, err := dec.Token()
	if err != nil {
		return e, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return e, fmt.Errorf("entry is %v, not an object", tok)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return e, err
		}
		key, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return e, err
		}
		var dst any
		switch key {
		case "dtype":
			dst = &e.DType
		case "shape":
			dst = &e.Shape
		case "data_offsets":
			dst = &e.DataOffsets
		default:
			continue
		}
		if seen[key] {
			return e, fmt.Errorf("%q given twice", key)
		}
		seen[key] = true
		if err := json.Unmarshal(v, dst); err != nil {
			return e, fmt.Errorf("%s: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return e, err
	}
	return e, nil
}

// ParseHeader validates the JSON header hdr against a data area of dataLen bytes.
// It checks that the header is a JSON object with no duplicate names, that every
// dtype is supported, that each tensor's byte length equals its element count times
// the dtype size, and that the tensors tile the data area exactly (no overlaps, no
// holes, nothing past the end). It never panics, whatever the input.
func ParseHeader(hdr []byte, dataLen int64) (*Header, error) {
	if len(hdr) > MaxHeaderSize {
		return nil, fmt.Errorf("header is %d bytes, more than the %d allowed", len(hdr), MaxHeaderSize)
	}
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, errors.New("header does not start with '{'")
	}
	if !utf8.Valid(hdr) {
		return nil, errors.New("header is not valid UTF-8")
	}
	if dataLen < 0 {
		return nil, fmt.Errorf("negative data length %d", dataLen)
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // the opening '{'
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	h := &Header{index: map[string]int{}}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("header JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("header JSON: key %v is not a string", tok)
		}
		if seen[name] {
			return nil, fmt.Errorf("header: duplicate entry %q", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			var md map[string]string
			if err := dec.Decode(&md); err != nil {
				return nil, fmt.Errorf("header: __metadata__ must map strings to strings: %w", err)
			}
			h.Metadata = md
			continue
		}
		e, err := decodeEntry(dec)
		if err != nil {
			return nil, fmt.Errorf("header: tensor %q: %w", name, err)
		}
		t, err := checkEntry(name, e, dataLen)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, t)
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	// Only padding may follow the object.
	rest := hdr[dec.InputOffset():]
	if len(bytes.Trim(rest, " \t\r\n")) != 0 {
		return nil, fmt.Errorf("header: %d unexpected bytes after the JSON object", len(bytes.TrimRight(rest, " ")))
	}

	// The tensors must tile [0, dataLen) exactly: this rejects overlapping tensors
	// (two names reading the same bytes) and hidden bytes (polyglot files).
	sort.SliceStable(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	var at int64
	for i, t := range h.Tensors {
		if t.Begin != at {
			if t.Begin < at {
				return nil, fmt.Errorf("header: tensor %q [%d,%d) overlaps tensor %q", t.Name, t.Begin, t.End, h.Tensors[i-1].Name)
			}
			return nil, fmt.Errorf("header: %d unused bytes before tensor %q at offset %d", t.Begin-at, t.Name, t.Begin)
		}
		at = t.End
		h.index[t.Name] = i
	}
	if at != dataLen {
		return nil, fmt.Errorf("header: tensors cover %d bytes but the data area has %d", at, dataLen)
	}
	return h, nil
}

func checkEntry(name string, e rawEntry, dataLen int64) (TensorInfo, error) {
	fail := func(format string, a ...any) (TensorInfo, error) {
		return TensorInfo{}, fmt.Errorf("header: tensor %q: "+format, append([]any{name}, a...)...)
	}
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return fail("needs dtype, shape and data_offsets")
	}
	t := TensorInfo{Name: name, DType: DType(*e.DType)}
	if err := checkDType(t.DType); err != nil {
		return fail("%v", err)
	}
	size := int64(t.DType.Size())
	n := int64(1)
	for _, d := range *e.Shape {
		if d < 0 {
			return fail("negative dimension in shape %v", *e.Shape)
		}
		if d > 0 && n > math.MaxInt64/size/d {
			return fail("shape %v overflows", *e.Shape)
		}
		n *= d
		if int64(int(d)) != d {
			return fail("dimension %d too large for this platform", d)
		}
		t.Shape = append(t.Shape, int(d))
	}
	if t.Shape == nil {
		t.Shape = []int{}
	}
	off := *e.DataOffsets
	if len(off) != 2 {
		return fail("data_offsets must be [begin, end], got %v", off)
	}
	t.Begin, t.End = off[0], off[1]
	if t.Begin < 0 || t.End < t.Begin {
		return fail("bad data_offsets [%d,%d]", t.Begin, t.End)
	}
	if t.End > dataLen {
		return fail("data_offsets [%d,%d] past the end of the %d-byte data area (truncated file?)", t.Begin, t.End, dataLen)
	}
	if t.End-t.Begin != n*size {
		return fail("data_offsets [%d,%d] hold %d bytes, but shape %v of %s needs %d", t.Begin, t.End, t.End-t.Begin, t.Shape, t.DType, n*size)
	}
	return t, nil
}
