package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

// File is one safetensors file, memory-mapped. It is safe for concurrent reads.
type File struct {
	path   string
	header *Header
	data   []byte // the data area: the bytes after the header
	unmap  func() error
}

// OpenFile maps the safetensors file at path and validates its header. Tensor bytes
// are not read until asked for.
func OpenFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s is not a regular file", path)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("safetensors: %s: %d bytes is too short for a header length (truncated file?)", path, size)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("safetensors: %s: %d bytes cannot be mapped on this platform", path, size)
	}
	b, unmap, err := mapFile(f, size)
	if err != nil {
		return nil, fmt.Errorf("safetensors: map %s: %w", path, err)
	}
	sf, err := parse(b)
	if err != nil {
		_ = unmap()
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	sf.path, sf.unmap = path, unmap
	return sf, nil
}

// ReadBytes parses a whole safetensors file held in memory. The File refers to b.
func ReadBytes(b []byte) (*File, error) {
	f, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

func parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%d bytes is too short for a header length (truncated file?)", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("header length %d but only %d bytes follow (truncated file?)", n, len(b)-8)
	}
	data := b[8+n:]
	h, err := ParseHeader(b[8:8+n], int64(len(data)))
	if err != nil {
		return nil, err
	}
	return &File{header: h, data: data}, nil
}

// Path is the file's path ("" for ReadBytes).
func (f *File) Path() string { return f.path }

// Header returns the parsed header.
func (f *File) Header() *Header { return f.header }

// Metadata returns the __metadata__ map (nil when absent).
func (f *File) Metadata() map[string]string { return f.header.Metadata }

// Names returns the tensor names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.header.Tensors))
	for _, t := range f.header.Tensors {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names
}

// Info returns the dtype, shape and offsets of a tensor.
func (f *File) Info(name string) (TensorInfo, bool) { return f.header.Lookup(name) }

// Bytes returns the raw little-endian bytes of a tensor. They point into the mapping:
// read-only, and valid only until Close.
func (f *File) Bytes(name string) ([]byte, error) {
	t, ok := f.header.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: %q: %w", f.label(), name, ErrNotFound)
	}
	if f.data == nil && t.End > 0 {
		return nil, fmt.Errorf("safetensors: %s: file is closed", f.label())
	}
	return f.data[t.Begin:t.End:t.End], nil
}

// Float32 returns a new []float32 holding the tensor's values converted from its dtype.
func (f *File) Float32(name string) ([]float32, error) {
	t, ok := f.header.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: %q: %w", f.label(), name, ErrNotFound)
	}
	dst := make([]float32, t.NumElements())
	if err := f.Float32Into(dst, name); err != nil {
		return nil, err
	}
	return dst, nil
}

// Float32Into converts the tensor into dst, whose length must equal its element count.
func (f *File) Float32Into(dst []float32, name string) error {
	b, err := f.Bytes(name)
	if err != nil {
		return err
	}
	t, _ := f.header.Lookup(name)
	if len(dst) != t.NumElements() {
		return fmt.Errorf("safetensors: %s: tensor %q has %d elements, destination %d", f.label(), name, t.NumElements(), len(dst))
	}
	if err := ToFloat32(dst, t.DType, b); err != nil {
		return fmt.Errorf("safetensors: %s: tensor %q: %w", f.label(), name, err)
	}
	return nil
}

// Close unmaps the file. Byte slices returned by Bytes must not be used afterwards.
func (f *File) Close() error {
	f.data = nil
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	return u()
}

func (f *File) label() string {
	if f.path == "" {
		return "<memory>"
	}
	return f.path
}

// ErrNotFound is wrapped by lookups of a name the file or set does not hold.
var ErrNotFound = errors.New("tensor not found")
