package model

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
)

// New returns a model of config c with every weight allocated (zero; norm
// weights zero too) and computing with be. Load and tinymodel fill it.
func New(c Config, be kernels.Backend) (*Model, error) { return newModel(c, be, false) }

// NewAs is New with the projection, embedding and lm_head matrices held as
// dt says (zero either way).
func NewAs(c Config, be kernels.Backend, dt WeightDType) (*Model, error) {
	bf16, err := dt.isBF16()
	if err != nil {
		return nil, err
	}
	return newModel(c, be, bf16)
}

// newModel is New, allocating the projection, embedding and lm_head
// matrices as bfloat16 when bf16 is set.
func newModel(c Config, be kernels.Backend, bf16 bool) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, fmt.Errorf("model: nil backend")
	}
	c.RoPE.HeadDim = c.HeadDim
	inv, err := kernels.RoPEInvFreq(c.RoPE)
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	if c.RoPELinear > 1 {
		scaled := make([]float32, len(inv))
		for i, f := range inv {
			scaled[i] = float32(float64(f) / c.RoPELinear)
		}
		inv = scaled
	}
	localInv := inv
	if strings.Contains(c.LayerKinds, "S") {
		c.LocalRoPE.HeadDim = c.HeadDim
		if localInv, err = kernels.RoPEInvFreq(c.LocalRoPE); err != nil {
			return nil, fmt.Errorf("model config: sliding layers: %w", err)
		}
	}
	m := &Model{Config: c, be: be, Blocks: make([]Block, c.Layers)}
	m.slabs.be = be
	// Every buffer an op reads is the backend's (kernels.AllocF32): the
	// first failure is kept and the model freed.
	var aerr error
	f32 := func(n int) []float32 {
		x, err := m.allocF32(n)
		if err != nil && aerr == nil {
			aerr = err
		}
		return x
	}
	on := func(host []float32) []float32 {
		x := f32(len(host))
		copy(x, host)
		return x
	}
	inv = on(inv)
	if strings.Contains(c.LayerKinds, "S") {
		localInv = on(localInv)
	}
	C := c.Hidden
	m.Norm = f32(C)
	lin := func(mod Module, bias bool) Linear {
		in, out := c.dims(mod)
		l := Linear{In: in, Out: out}
		if bias {
			l.Bias = f32(out)
		}
		return l
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		b.C, b.Eps, b.NormOffset = C, c.RMSNormEps, c.NormOffset
		b.InputNorm, b.PostNorm = f32(C), f32(C)
		if c.SandwichNorms {
			b.PreFFNorm, b.PostFFNorm = f32(C), f32(C)
		}
		b.Attn = Attention{
			Q: lin(ModQ, c.QKVBias), K: lin(ModK, c.QKVBias), V: lin(ModV, c.QKVBias), O: lin(ModO, c.OBias),
			H: c.Heads, KVH: c.KVHeads, D: c.HeadDim, Eps: c.RMSNormEps, InvFreq: inv,
			Scale: c.AttnScale, NormOffset: c.NormOffset,
		}
		if c.sliding(i) {
			b.Attn.InvFreq, b.Attn.Window = localInv, c.SlidingWindow
		}
		if c.QKNorm {
			b.Attn.QNorm, b.Attn.KNorm = f32(c.HeadDim), f32(c.HeadDim)
		}
		b.MLP = MLP{Gate: lin(ModGate, c.MLPBias), Up: lin(ModUp, c.MLPBias), Down: lin(ModDown, c.MLPBias), GELU: c.Act == "gelu_tanh"}
	}
	if aerr == nil {
		aerr = m.allocMatrices(bf16)
	}
	if aerr != nil {
		m.Close()
		return nil, aerr
	}
	return m, nil
}

// allocF32 returns n zeroed float32 values in the backend's memory, owned
// by the model until Close.
func (m *Model) allocF32(n int) ([]float32, error) {
	x, err := kernels.AllocF32(m.be, n)
	if err != nil {
		return nil, fmt.Errorf("model: allocating %d float32 values on %s: %w", n, m.be.Name(), err)
	}
	m.owned = append(m.owned, x)
	return x, nil
}

// Close frees the memory the model allocated through its backend: the
// weights and the activation memory of released passes. Release every pass
// and free what Step returned (FreeLogits) first; the model must not be
// used afterwards. On a backend that is not a kernels.Allocator it only
// drops the references (the garbage collector frees the memory). The
// backend itself stays open: its owner closes it.
func (m *Model) Close() error {
	m.slabs.drain()
	for _, x := range m.owned {
		kernels.FreeF32(m.be, x)
	}
	m.owned = nil
	kernels.FreeF32(m.be, m.matF32)
	kernels.FreeBF16(m.be, m.matBF16)
	m.matF32, m.matBF16 = nil, nil
	m.Embed, m.Head, m.Norm, m.Blocks = Matrix{}, Matrix{}, nil, nil
	return nil
}

// Tensor is one named weight of the model as the checkpoint names it, with
// its shape. Values (float32) or, for matrices converted by ToBF16, Bits
// (bfloat16) alias the model's memory.
type Tensor struct {
	Name   string
	Shape  []int
	Values []float32
	Bits   []uint16
}

// Tensors lists every weight the model holds under its checkpoint name, in
// struct order (the tied lm_head is omitted). The names come from the hf
// struct tags of Model, Block, Attention, MLP and Linear. The values alias
// the model's memory: Tensors waits for the backend's queued ops first
// (kernels.Synchronize), so the host may read or write them until the next
// op.
func (m *Model) Tensors() []Tensor {
	kernels.Synchronize(m.be)
	var out []Tensor
	walk(reflect.ValueOf(m).Elem(), "", func(t Tensor) {
		if t.Name == "lm_head.weight" && m.Config.TieEmbeddings {
			return
		}
		out = append(out, t)
	})
	return out
}

// walk visits every allocated weight under v, naming it by the hf tags.
func walk(v reflect.Value, prefix string, visit func(Tensor)) {
	t := v.Type()
	for i := range t.NumField() {
		tag, ok := t.Field(i).Tag.Lookup("hf")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		f := v.Field(i)
		switch x := f.Addr().Interface().(type) {
		case *[]float32:
			if *x != nil {
				visit(Tensor{Name: prefix + name, Shape: []int{len(*x)}, Values: *x})
			}
		case *Matrix: // the embedding table and lm_head
			m := v.Addr().Interface().(*Model)
			visit(Tensor{Name: prefix + name, Shape: []int{m.Config.Vocab, m.Config.Hidden}, Values: x.F32, Bits: x.BF16})
		case *Linear:
			visit(Tensor{Name: prefix + name + ".weight", Shape: []int{x.Out, x.In}, Values: x.Weight.F32, Bits: x.Weight.BF16})
			if x.Bias != nil {
				visit(Tensor{Name: prefix + name + ".bias", Shape: []int{x.Out}, Values: x.Bias})
			}
		case *[]Block:
			for l := range *x {
				walk(reflect.ValueOf(&(*x)[l]).Elem(), prefix+name+"."+strconv.Itoa(l)+".", visit)
			}
		default:
			if f.Kind() == reflect.Struct {
				walk(f, prefix+name+".", visit)
			}
		}
	}
}

// TensorSource is where weights are read from; *safetensors.Set is one.
type TensorSource interface {
	Info(name string) (safetensors.TensorInfo, bool)
	Bytes(name string) ([]byte, error)
	Float32Into(dst []float32, name string) error
}

// loadChunk is how many elements LoadWeights converts at a time into a
// bfloat16 matrix: a float32 copy of a whole matrix (545 MB for the
// Qwen2.5-0.5B embedding) would be garbage that the process's peak RSS
// counts, undoing much of what bfloat16 saves.
const loadChunk = 1 << 16

// LoadWeights fills every weight of m from src, converting f16/bf16 to
// float32 (or any dtype to a bfloat16 matrix's bits, a chunk at a time),
// and checks each tensor's shape. A tied model whose checkpoint also
// carries lm_head.weight ignores it.
func (m *Model) LoadWeights(src TensorSource) error {
	var buf []float32 // conversion buffer for bfloat16 matrices
	for _, t := range m.Tensors() {
		info, ok := src.Info(t.Name)
		if !ok {
			return fmt.Errorf("model: checkpoint has no tensor %q (config family %s)", t.Name, m.Config.Family)
		}
		if !equalShape(info.Shape, t.Shape) {
			return fmt.Errorf("model: tensor %q has shape %v, config wants %v", t.Name, info.Shape, t.Shape)
		}
		if t.Bits == nil {
			if err := src.Float32Into(t.Values, t.Name); err != nil {
				return fmt.Errorf("model: tensor %q: %w", t.Name, err)
			}
			if i := safetensors.FirstNonFinite(t.Values); i >= 0 {
				return nonFiniteWeight(t, i, t.Values[i])
			}
			continue
		}
		if buf == nil {
			buf = make([]float32, loadChunk)
		}
		i, err := loadBF16(m.be, t.Bits, src, t.Name, info.DType, buf)
		if err != nil {
			return fmt.Errorf("model: tensor %q: %w", t.Name, err)
		}
		if i >= 0 {
			return nonFiniteWeight(t, i, kernels.F32(t.Bits[i]))
		}
	}
	return nil
}

// nonFiniteWeight is LoadWeights' error for a weight holding a NaN or an
// infinity at element i: such a checkpoint (a diverged merge, a bad
// conversion) gives NaN logits wherever the tensor is read and NaN losses
// from a training run's first step, far from the cause, so it is refused
// at load, naming the tensor and the element.
func nonFiniteWeight(t Tensor, i int, v float32) error {
	return fmt.Errorf("model: tensor %q (shape %v) holds %v at element %d (row-major index %v): a checkpoint's weights must be finite", t.Name, t.Shape, v, i, unravel(i, t.Shape))
}

// unravel returns the row-major index of flat element i in shape.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d], i = i%shape[d], i/shape[d]
		}
	}
	return idx
}

// loadBF16 fills bits, be's memory, with the tensor name of dtype d and
// returns the index of its first NaN or infinity (−1: none). On a
// little-endian host a bfloat16 tensor's bytes are its bits (widening to
// float32 and rounding back, as before, gives the same bits for every
// finite value): a copy and firstNonFiniteBF16, 7–9 GB/s here, where the
// round trip ran at 0.5–0.9 GB/s (a 7B checkpoint's 15 GB: 16–30 s). Other
// dtypes are converted through float32, len(buf) elements at a time, and
// checked as float32. The bits go into be's memory by kernels.UploadBF16
// (a bfloat16 tensor at an even address in one call, from the file's
// bytes; others a chunk at a time): on a kernels.HostUploader
// (kernels/cuda) a bulk transfer, not host writes that would fault the
// managed pages over one at a time.
func loadBF16(be kernels.Backend, bits []uint16, src TensorSource, name string, d safetensors.DType, buf []float32) (int, error) {
	b, err := src.Bytes(name)
	if err != nil {
		return -1, err
	}
	size := d.Size()
	littleEndian := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	if len(b) != len(bits)*size {
		return -1, fmt.Errorf("%d bytes of %s for %d elements", len(b), d, len(bits))
	}
	if d == safetensors.BF16 && littleEndian {
		if i := firstNonFiniteBF16(b); i >= 0 {
			return i, nil
		}
		if len(b) > 0 && uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
			kernels.UploadBF16(be, bits, unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(bits))) // the file's bytes in place
			return -1, nil
		}
	}
	// A chunk's bits are made in host memory and uploaded on a
	// HostUploader; elsewhere bits is the host's, and they are made there.
	var host []uint16
	if _, up := be.(kernels.HostUploader); up {
		host = make([]uint16, min(len(buf), len(bits)))
	}
	for lo := 0; lo < len(bits); lo += len(buf) {
		dst := bits[lo:min(len(bits), lo+len(buf))]
		h := dst
		if host != nil {
			h = host[:len(dst)]
		}
		if d == safetensors.BF16 && littleEndian { // an odd address: a chunk at a time
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*len(h)), b[2*lo:])
			if host != nil {
				kernels.UploadBF16(be, dst, h)
			}
			continue
		}
		f := buf[:len(dst)]
		if err := safetensors.ToFloat32(f, d, b[lo*size:(lo+len(f))*size]); err != nil {
			return -1, err
		}
		if i := safetensors.FirstNonFinite(f); i >= 0 {
			return lo + i, nil
		}
		kernels.ToBF16(h, f)
		if host != nil {
			kernels.UploadBF16(be, dst, h)
		}
	}
	return -1, nil
}

// firstNonFiniteBF16 returns the index of the first NaN or infinity
// (every exponent bit set) among the little-endian bfloat16 values of b,
// or −1. Sixteen values a step without a branch: in each 16-bit lane of a
// word, the exponent bits plus 0x80 carry into the lane's top bit only
// when all of them are set (at most 0x7f80 + 0x80, so no lane carries
// into the next); with the copy 7–9 GB/s here, 2–4 GB/s a value at a time.
func firstNonFiniteBF16(b []byte) int {
	const exp, carry, top = 0x7f807f807f807f80, 0x0080008000800080, 0x8000800080008000
	le := binary.LittleEndian
	n := len(b) &^ 31
	for i := 0; i < n; i += 32 {
		w := b[i : i+32]
		acc := (le.Uint64(w)&exp + carry) | (le.Uint64(w[8:])&exp + carry) | (le.Uint64(w[16:])&exp + carry) | (le.Uint64(w[24:])&exp + carry)
		if acc&top != 0 {
			n = i // the first hit is in these 16 values: find it below
			break
		}
	}
	for i := n; i+1 < len(b); i += 2 {
		if le.Uint16(b[i:])&0x7f80 == 0x7f80 {
			return i / 2
		}
	}
	return -1
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
