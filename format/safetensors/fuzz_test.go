package safetensors

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func fuzzSeeds(f *testing.F) {
	for _, c := range hostileCases() {
		f.Add(c.file)
	}
	r := rand.New(rand.NewPCG(5, 6))
	var buf bytes.Buffer
	ts := []Tensor{randomTensor(r, "a", F32, []int{2, 3}), randomTensor(r, "b", BF16, []int{3}), randomTensor(r, "c", BOOL, []int{})}
	if err := Encode(&buf, ts, nil); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(rawFile(`{"e":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]},"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{1, 2}))
}

// FuzzOpen feeds whole files to the parser. Whatever it accepts must be readable
// tensor by tensor and must survive a write/read round trip unchanged.
func FuzzOpen(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := ReadBytes(b)
		if err != nil {
			return
		}
		var ts []Tensor
		for _, name := range sf.Names() {
			info, _ := sf.Info(name)
			raw, err := sf.Bytes(name)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(raw)) != info.End-info.Begin || len(raw) != info.NumElements()*info.DType.Size() {
				t.Fatalf("%s: %d bytes for %+v", name, len(raw), info)
			}
			if _, err := sf.Float32(name); err != nil {
				t.Fatal(err)
			}
			ts = append(ts, Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: raw})
		}
		var buf bytes.Buffer
		if err := Encode(&buf, ts, sf.Metadata()); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := ReadBytes(buf.Bytes())
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		for _, tt := range ts {
			got, err := back.Bytes(tt.Name)
			if err != nil || !bytes.Equal(got, tt.Data) {
				t.Fatalf("%s changed in round trip", tt.Name)
			}
		}
	})
}

// FuzzParseHeader feeds header JSON alone against a data length.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`), int64(4))
	f.Add([]byte(`{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}  `), int64(8))
	f.Add([]byte(`{"a":{"dtype":"I64","shape":[9223372036854775807],"data_offsets":[0,8]}}`), int64(8))
	f.Add([]byte(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`), int64(4))
	f.Add([]byte(`{"a":{}}`), int64(0))
	f.Add([]byte(`{`), int64(0))
	f.Fuzz(func(t *testing.T, hdr []byte, dataLen int64) {
		h, err := ParseHeader(hdr, dataLen)
		if err != nil {
			return
		}
		var at int64
		for _, tt := range h.Tensors {
			if tt.Begin != at || tt.End < tt.Begin || tt.End-tt.Begin != int64(tt.NumElements()*tt.DType.Size()) {
				t.Fatalf("accepted bad tensor %+v", tt)
			}
			at = tt.End
		}
		if at != dataLen {
			t.Fatalf("tensors cover %d of %d bytes", at, dataLen)
		}
	})
}
