package safetensors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Tensor is one tensor to write: raw little-endian bytes of Shape in DType.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// FromFloat32Tensor encodes values (row-major, len = product of shape) as dtype
// (F32, F16 or BF16) into a Tensor ready to write.
func FromFloat32Tensor(name string, dtype DType, shape []int, values []float32) (Tensor, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != len(values) {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: shape %v needs %d values, got %d", name, shape, n, len(values))
	}
	b, err := FromFloat32(dtype, values)
	if err != nil {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	return Tensor{Name: name, DType: dtype, Shape: append([]int(nil), shape...), Data: b}, nil
}

// sortForWrite orders tensors by descending dtype size (so every tensor starts
// aligned to its element size once the data area is 8-aligned), then by name.
func sortForWrite(ts []Tensor) []Tensor {
	out := append([]Tensor(nil), ts...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].DType.Size(), out[j].DType.Size()
		if a != b {
			return a > b
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// checkTensors refuses what would not read back as written. A header is
// JSON, which holds only UTF-8: encoding/json writes U+FFFD for a byte that
// is not, so such a name or metadata string would come back as another.
func checkTensors(ts []Tensor, metadata map[string]string) error {
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("safetensors: metadata %q: %q is not valid UTF-8", k, v)
		}
	}
	seen := map[string]bool{}
	for _, t := range ts {
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if !utf8.ValidString(t.Name) {
			return fmt.Errorf("safetensors: tensor name %q is not valid UTF-8", t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		if err := checkDType(t.DType); err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: tensor %q: negative dimension in %v", t.Name, t.Shape)
			}
			n *= d
		}
		if len(t.Data) != n*t.DType.Size() {
			return fmt.Errorf("safetensors: tensor %q: %d bytes, but shape %v of %s needs %d", t.Name, len(t.Data), t.Shape, t.DType, n*t.DType.Size())
		}
	}
	return nil
}

// header builds the padded JSON header for tensors already in write order.
func header(ts []Tensor, metadata map[string]string) ([]byte, error) {
	md := map[string]string{"format": "pt"}
	for k, v := range metadata {
		md[k] = v
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	mdJSON, err := json.Marshal(md) // map keys come out sorted: deterministic bytes
	if err != nil {
		return nil, err
	}
	buf.WriteString(`"__metadata__":`)
	buf.Write(mdJSON)
	var off int64
	for _, t := range ts {
		name, err := json.Marshal(t.Name)
		if err != nil {
			return nil, err
		}
		buf.WriteByte(',')
		buf.Write(name)
		buf.WriteString(`:{"dtype":"`)
		buf.WriteString(string(t.DType))
		buf.WriteString(`","shape":[`)
		for i, d := range t.Shape {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.Itoa(d))
		}
		end := off + int64(len(t.Data))
		fmt.Fprintf(&buf, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	buf.WriteByte('}')
	// Pad with spaces so the data area starts 8-byte aligned (8-byte length + header).
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	return buf.Bytes(), nil
}

// Encode writes a safetensors file to w. metadata is stored as __metadata__, with
// "format": "pt" added unless the caller set "format" (transformers refuses files
// whose format is not one it knows).
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	if err := checkTensors(tensors, metadata); err != nil {
		return err
	}
	ts := sortForWrite(tensors)
	hdr, err := header(ts, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: header: %w", err)
	}
	var n [8]byte
	for i := range n {
		n[i] = byte(uint64(len(hdr)) >> (8 * i))
	}
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// Write writes tensors to path atomically: into a temporary file in the same folder,
// synced, then renamed over path, so a reader never sees a partial file.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	if err := checkTensors(tensors, metadata); err != nil {
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	return writeAtomic(path, func(w io.Writer) error { return Encode(w, tensors, metadata) })
}

// WriteAtomic runs write against a temporary file beside path and renames it to path
// once write succeeded and the data is synced. Exported for writers of companion
// files (indexes, configs) that want the same guarantee.
func WriteAtomic(path string, write func(io.Writer) error) error { return writeAtomic(path, write) }

func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err = write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil { // make the rename itself durable; best effort
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// WriteSharded writes tensors into dir as model-0000i-of-0000n.safetensors shards of
// at most maxShardBytes of tensor data each (a larger single tensor gets a shard of its
// own) plus model.safetensors.index.json, written last so that a reader who finds the
// index finds every shard complete.
func WriteSharded(dir string, tensors []Tensor, maxShardBytes int64, metadata map[string]string) error {
	if err := checkTensors(tensors, metadata); err != nil {
		return fmt.Errorf("%w (writing %s)", err, dir)
	}
	if maxShardBytes <= 0 {
		return fmt.Errorf("safetensors: maxShardBytes must be positive, got %d", maxShardBytes)
	}
	ts := sortForWrite(tensors)
	var shards [][]Tensor
	var cur []Tensor
	var size, total int64
	for _, t := range ts {
		n := int64(len(t.Data))
		if len(cur) > 0 && size+n > maxShardBytes {
			shards = append(shards, cur)
			cur, size = nil, 0
		}
		cur = append(cur, t)
		size += n
		total += n
	}
	if len(cur) > 0 || len(shards) == 0 {
		shards = append(shards, cur)
	}
	idx := Index{Metadata: map[string]any{"total_size": total}, WeightMap: map[string]string{}}
	for i, sh := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := Write(filepath.Join(dir, name), sh, metadata); err != nil {
			return err
		}
		for _, t := range sh {
			idx.WeightMap[t.Name] = name
		}
	}
	raw, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("safetensors: index: %w", err)
	}
	return writeAtomic(filepath.Join(dir, IndexName), func(w io.Writer) error {
		_, err := w.Write(append(raw, '\n'))
		return err
	})
}
