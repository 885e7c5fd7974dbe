package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawFile assembles a safetensors file from a header string and data, without any of
// the writer's checks, so tests can build hostile files.
func rawFile(header string, data []byte) []byte {
	var b bytes.Buffer
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	b.Write(n[:])
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

// wantFloat32 decodes element i of dtype d from b with a plain switch: the oracle for
// ToFloat32.
func wantFloat32(d DType, b []byte, i int) float32 {
	le := binary.LittleEndian
	switch d {
	case F32:
		return math.Float32frombits(le.Uint32(b[4*i:]))
	case F64:
		return float32(math.Float64frombits(le.Uint64(b[8*i:])))
	case F16:
		return float32(f16Oracle(le.Uint16(b[2*i:])))
	case BF16:
		return math.Float32frombits(uint32(le.Uint16(b[2*i:])) << 16)
	case BOOL:
		if b[i] != 0 {
			return 1
		}
		return 0
	case U8:
		return float32(b[i])
	case I8:
		return float32(int8(b[i]))
	case I16:
		return float32(int16(le.Uint16(b[2*i:])))
	case U16:
		return float32(le.Uint16(b[2*i:]))
	case I32:
		return float32(int32(le.Uint32(b[4*i:])))
	case U32:
		return float32(le.Uint32(b[4*i:]))
	case I64:
		return float32(int64(le.Uint64(b[8*i:])))
	case U64:
		return float32(le.Uint64(b[8*i:]))
	}
	panic("dtype " + string(d))
}

var allDTypes = []DType{BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64}

// randomTensor makes a tensor of dtype d with seeded random bytes; float patterns are
// drawn from real values so no NaN compares unequal.
func randomTensor(r *rand.Rand, name string, d DType, shape []int) Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	b := make([]byte, n*d.Size())
	le := binary.LittleEndian
	for i := 0; i < n; i++ {
		v := r.NormFloat64() * 3
		switch d {
		case F32:
			le.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case F64:
			le.PutUint64(b[8*i:], math.Float64bits(v))
		case F16:
			le.PutUint16(b[2*i:], F32ToF16(float32(v)))
		case BF16:
			le.PutUint16(b[2*i:], F32ToBF16(float32(v)))
		case BOOL:
			b[i] = byte(r.IntN(2))
		default:
			for k := 0; k < d.Size(); k++ {
				b[i*d.Size()+k] = byte(r.Uint32())
			}
		}
	}
	return Tensor{Name: name, DType: d, Shape: shape, Data: b}
}

func TestRoundTripEveryDType(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	shapes := [][]int{{}, {0}, {1}, {3}, {2, 5}, {3, 1, 7}}
	var tensors []Tensor
	for _, d := range allDTypes {
		for _, s := range shapes {
			tensors = append(tensors, randomTensor(r, fmt.Sprintf("t.%s.%v", d, s), d, s))
		}
	}
	path := filepath.Join(t.TempDir(), "all.safetensors")
	if err := Write(path, tensors, map[string]string{"note": "round trip"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hlen := binary.LittleEndian.Uint64(raw)
	if (8+hlen)%8 != 0 {
		t.Errorf("data area starts at %d, not 8-byte aligned", 8+hlen)
	}
	if !bytes.HasPrefix(raw[8:], []byte(`{"__metadata__":{"format":"pt","note":"round trip"}`)) {
		t.Errorf("header starts %q", raw[8:60])
	}
	if strings.TrimRight(string(raw[8:8+hlen]), " ") == string(raw[8:8+hlen]) && hlen%8 != 0 {
		t.Errorf("header not padded")
	}
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Names()) != len(tensors) {
		t.Fatalf("%d tensors read, %d written", len(f.Names()), len(tensors))
	}
	for _, want := range tensors {
		info, ok := f.Info(want.Name)
		if !ok {
			t.Fatalf("missing %q", want.Name)
		}
		if info.DType != want.DType || fmt.Sprint(info.Shape) != fmt.Sprint(want.Shape) {
			t.Errorf("%s: got %s %v, want %s %v", want.Name, info.DType, info.Shape, want.DType, want.Shape)
		}
		if info.Begin%int64(want.DType.Size()) != 0 {
			t.Errorf("%s: offset %d not aligned to %d", want.Name, info.Begin, want.DType.Size())
		}
		got, err := f.Bytes(want.Name)
		if err != nil || !bytes.Equal(got, want.Data) {
			t.Fatalf("%s: bytes differ (err %v)", want.Name, err)
		}
		vals, err := f.Float32(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if w := wantFloat32(want.DType, want.Data, i); v != w {
				t.Fatalf("%s[%d] = %g, want %g", want.Name, i, v, w)
			}
		}
	}
	if f.Metadata()["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata())
	}
}

func TestFloat32TensorRoundTrip(t *testing.T) {
	vals := []float32{0, 1, -2.5, 1e-3, 3.14159, 65504, -1e-7}
	for _, d := range []DType{F32, F16, BF16} {
		tt, err := FromFloat32Tensor("x", d, []int{7}, vals)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, []Tensor{tt}, nil); err != nil {
			t.Fatal(err)
		}
		f, err := ReadBytes(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Float32("x")
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			var want float32
			switch d {
			case F32:
				want = v
			case F16:
				want = F16ToF32(F32ToF16(v))
			case BF16:
				want = BF16ToF32(F32ToBF16(v))
			}
			if got[i] != want {
				t.Errorf("%s: [%d] = %g, want %g", d, i, got[i], want)
			}
			if rel := math.Abs(float64(got[i]-v)) / math.Max(math.Abs(float64(v)), 1e-3); v != 0 && rel > 1.0/128 {
				t.Errorf("%s: [%d] = %g far from %g", d, i, got[i], v)
			}
		}
	}
	if _, err := FromFloat32Tensor("x", I32, []int{1}, []float32{1}); err == nil {
		t.Error("encoding float32 as I32 succeeded")
	}
	if _, err := FromFloat32Tensor("x", F32, []int{2}, []float32{1}); err == nil {
		t.Error("shape mismatch accepted")
	}
}

func TestWriteRejects(t *testing.T) {
	dir := t.TempDir()
	good := Tensor{Name: "a", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}
	cases := map[string][]Tensor{
		"duplicate":  {good, good},
		"size":       {{Name: "a", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}},
		"dtype":      {{Name: "a", DType: "F8_E4M3", Shape: []int{1}, Data: make([]byte, 1)}},
		"metadata":   {{Name: "__metadata__", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}},
		"negative":   {{Name: "a", DType: F32, Shape: []int{-1}, Data: nil}},
		"empty name": {{Name: "", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}},
		// JSON holds only UTF-8: encoding/json wrote U+FFFD for the bad byte,
		// a tensor of another name (and two such names one name twice).
		"name not utf-8": {{Name: "a\xff", DType: F32, Shape: []int{1}, Data: make([]byte, 4)},
			{Name: "a\xfe", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}},
	}
	for name, ts := range cases {
		p := filepath.Join(dir, name+".safetensors")
		if err := Write(p, ts, nil); err == nil {
			t.Errorf("%s: write succeeded", name)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s: file left behind", name)
		}
	}
	for _, md := range []map[string]string{{"k": "v\xff"}, {"k\xff": "v"}} {
		p := filepath.Join(dir, "md.safetensors")
		if err := Write(p, []Tensor{good}, md); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("metadata %q: %v, want an error saying it is not UTF-8", md, err)
		}
		_ = os.Remove(p)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// hostileCases are malformed files with a fragment of the error each must produce.
// They double as fuzz seeds.
func hostileCases() map[string]struct {
	file []byte
	want string
} {
	f32 := func(n int) []byte { return make([]byte, 4*n) }
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, 1<<40)
	over := make([]byte, 8)
	binary.LittleEndian.PutUint64(over, MaxHeaderSize+1)
	overflow := make([]byte, 8)
	binary.LittleEndian.PutUint64(overflow, math.MaxUint64)
	lenOnly := make([]byte, 8)
	binary.LittleEndian.PutUint64(lenOnly, 100)
	return map[string]struct {
		file []byte
		want string
	}{
		"empty":              {nil, "too short"},
		"short length":       {[]byte{1, 0, 0}, "too short"},
		"huge header length": {huge, "exceeds"},
		"over max header":    {over, "exceeds"},
		"max uint64 length":  {overflow, "exceeds"},
		"truncated header":   {append(lenOnly, `{"a":`...), "truncated"},
		"not an object":      {rawFile(`[1,2]   `, nil), "does not start with '{'"},
		"empty header":       {rawFile(``, nil), "does not start with '{'"},
		"bad json":           {rawFile(`{"a":{"dtype":"F32",`, nil), "header"},
		"trailing garbage":   {rawFile(`{} x`, nil), "unexpected bytes"},
		"two objects":        {rawFile(`{}{}`, nil), "unexpected bytes"},
		"duplicate name":     {rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32(2)), "duplicate"},
		"unknown dtype":      {rawFile(`{"a":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}}`, f32(1)), "unknown dtype"},
		"unsupported dtype":  {rawFile(`{"a":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}}`, f32(1)), "not supported"},
		"missing offsets":    {rawFile(`{"a":{"dtype":"F32","shape":[1]}}`, f32(1)), "needs dtype"},
		"past end":           {rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32(1)), "past the end"},
		"size mismatch":      {rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, f32(1)), "needs 8"},
		"begin after end":    {rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, f32(1)), "bad data_offsets"},
		"negative offset":    {rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, f32(1)), "bad data_offsets"},
		"three offsets":      {rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, f32(1)), "[begin, end]"},
		"overlap":            {rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32(2)), "overlaps"},
		"hole":               {rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32(2)), "unused bytes"},
		"extra data":         {rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32(2)), "data area has 8"},
		"negative dim":       {rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, f32(1)), "negative dimension"},
		"shape overflow":     {rawFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,4]}}`, f32(1)), "overflows"},
		"fractional dim":     {rawFile(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, f32(1)), "tensor \"a\""},
		"metadata not str":   {rawFile(`{"__metadata__":{"format":1}}`, nil), "__metadata__"},
		"entry not object":   {rawFile(`{"a":3}`, nil), "tensor \"a\""},
		"invalid utf-8":      {rawFile("{\"\xff\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", nil), "UTF-8"},
	}
}

func TestHostileInputs(t *testing.T) {
	for name, c := range hostileCases() {
		t.Run(name, func(t *testing.T) {
			_, err := ReadBytes(c.file)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
			// The same bytes on disk go through mmap and must fail the same way.
			p := filepath.Join(t.TempDir(), "x.safetensors")
			if err := os.WriteFile(p, c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenFile(p); err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("OpenFile: %v (want an error naming the file)", err)
			}
		})
	}
}

func TestEdgeValidFiles(t *testing.T) {
	for name, b := range map[string][]byte{
		"no tensors":      rawFile(`{}`, nil),
		"padded":          rawFile(`{"__metadata__":{"format":"pt"}}       `, nil),
		"scalar":          rawFile(`{"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}`, make([]byte, 8)),
		"empty and other": rawFile(`{"e":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]},"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2}),
	} {
		f, err := ReadBytes(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, n := range f.Names() {
			if _, err := f.Float32(n); err != nil {
				t.Errorf("%s: %s: %v", name, n, err)
			}
		}
	}
}

func TestLookupMissing(t *testing.T) {
	f, err := ReadBytes(rawFile(`{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Float32("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

// An entry's keys are read as the reference reader (serde) reads them: by
// their exact names, once each, other keys ignored. Go's encoding/json
// matches struct fields case-insensitively and lets a repeated key win, so
// a header could say one dtype to PyTorch and another to Hone.
func TestEntryKeysExact(t *testing.T) {
	one := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	f, err := ReadBytes(rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"DTYPE":"I32"}}`, one))
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := f.Info("a"); info.DType != F32 {
		t.Errorf("dtype %s, want F32 (the reference ignores the key DTYPE)", info.DType)
	}
	if v, err := f.Float32("a"); err != nil || v[0] != 1.5 {
		t.Errorf("value %v, %v; want 1.5", v, err)
	}
	for header, want := range map[string]string{
		`{"a":{"Dtype":"F32","shape":[1],"data_offsets":[0,4]}}`:               "needs dtype",
		`{"a":{"dtype":"F32","Shape":[1],"data_offsets":[0,4]}}`:               "needs dtype, shape",
		`{"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4],"dtype":"F32"}}`: `"dtype" given twice`,
	} {
		_, err := ReadBytes(rawFile(header, one))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `tensor "a"`) {
			t.Errorf("%s: %v, want an error naming tensor \"a\" and %q", header, err, want)
		}
	}
}
