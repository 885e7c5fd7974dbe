package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DType is a safetensors dtype string as it appears in a header ("F32", "BF16", …).
type DType string

// The dtypes this package can read and write. Sub-byte and 8-bit float dtypes
// (F4, F6_*, F8_*) and complex C64 are recognised by name but rejected as
// unsupported: Hone has no use for them and their packing is easy to get wrong.
const (
	BOOL DType = "BOOL"
	U8   DType = "U8"
	I8   DType = "I8"
	I16  DType = "I16"
	U16  DType = "U16"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I32  DType = "I32"
	U32  DType = "U32"
	F32  DType = "F32"
	F64  DType = "F64"
	I64  DType = "I64"
	U64  DType = "U64"
)

// knownUnsupported lists dtypes the format defines that this package refuses, so the
// error can say "unsupported" rather than "unknown".
var knownUnsupported = map[DType]bool{
	"F8_E5M2": true, "F8_E4M3": true, "F8_E8M0": true, "F8_E4M3FNUZ": true,
	"F8_E5M2FNUZ": true, "C64": true, "F4": true, "F6_E2M3": true, "F6_E3M2": true,
}

// Size returns the bytes per element, or 0 for a dtype this package does not support.
func (d DType) Size() int {
	switch d {
	case BOOL, U8, I8:
		return 1
	case I16, U16, F16, BF16:
		return 2
	case I32, U32, F32:
		return 4
	case F64, I64, U64:
		return 8
	}
	return 0
}

// checkDType returns an error naming the dtype when it cannot be handled.
func checkDType(d DType) error {
	if d.Size() > 0 {
		return nil
	}
	if knownUnsupported[d] {
		return fmt.Errorf("dtype %q is not supported (supported: BOOL U8 I8 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64)", string(d))
	}
	return fmt.Errorf("unknown dtype %q", string(d))
}

// BF16ToF32 returns the float32 with the same value as the bfloat16 bit pattern h.
// bfloat16 is the top half of a float32, so this is exact and needs no special cases.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds f to the nearest bfloat16 (ties to even). NaN stays NaN (quiet);
// values beyond the bfloat16 range round to ±Inf, as in PyTorch.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep sign, force a quiet mantissa bit
		return uint16(b>>16) | 0x0040
	}
	// Round to nearest even on the 16 dropped bits.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F16ToF32 returns the float32 with the same value as the IEEE 754 binary16 bit
// pattern h: normals and subnormals exactly, ±0, ±Inf, and NaN with its payload.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = mant · 2^-24. Shift the leading one up to bit 10 and
		// lower the exponent once per shift.
		e := uint32(113) // biased float32 exponent of 2^-14, the smallest normal half
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 rounds f to the nearest IEEE binary16 (ties to even), producing
// subnormals below 2^-14, ±Inf on overflow, and a quiet NaN for NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): shift the mantissa with its implicit one into place.
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		m := mant | 0x800000
		shift := uint32(14 - e) // 13 for the normal drop, plus 1-e for the subnormal
		half := uint32(1) << (shift - 1)
		rest := m & (1<<shift - 1)
		r := m >> shift
		if rest > half || (rest == half && r&1 == 1) {
			r++ // may carry into the smallest normal, which is the right answer
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && r&1 == 1) {
		r++ // carry may reach the exponent, and 0x7c00 is +Inf: both correct
	}
	return sign | uint16(r)
}

// ToFloat32 converts n elements of dtype d stored little-endian in src into dst
// (len(dst) must be len(src)/d.Size()). Integers and bools are widened to float32,
// which is exact up to 2^24 in magnitude.
func ToFloat32(dst []float32, d DType, src []byte) error {
	if err := checkDType(d); err != nil {
		return err
	}
	if len(src) != len(dst)*d.Size() {
		return fmt.Errorf("convert %s: %d bytes for %d elements", d, len(src), len(dst))
	}
	le := binary.LittleEndian
	switch d {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case BF16:
		// Plain loop: a shift per element; the compiler keeps it bounds-check light.
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(src[2*i])<<16 | uint32(src[2*i+1])<<24)
		}
	case F16:
		// Normal numbers (nearly all weights) take the inline path: move exponent and
		// mantissa up 13 bits and rebias the exponent by 127-15; F16ToF32 handles the rest.
		src = src[:2*len(dst)]
		for i := range dst {
			h := uint32(src[2*i]) | uint32(src[2*i+1])<<8
			if e := h & 0x7c00; e != 0 && e != 0x7c00 {
				dst[i] = math.Float32frombits((h&0x8000)<<16 | ((h&0x7fff)<<13 + 112<<23))
			} else {
				dst[i] = F16ToF32(uint16(h))
			}
		}
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case BOOL:
		for i := range dst {
			if src[i] != 0 {
				dst[i] = 1
			} else {
				dst[i] = 0
			}
		}
	case U8:
		for i := range dst {
			dst[i] = float32(src[i])
		}
	case I8:
		for i := range dst {
			dst[i] = float32(int8(src[i]))
		}
	case I16:
		for i := range dst {
			dst[i] = float32(int16(le.Uint16(src[2*i:])))
		}
	case U16:
		for i := range dst {
			dst[i] = float32(le.Uint16(src[2*i:]))
		}
	case I32:
		for i := range dst {
			dst[i] = float32(int32(le.Uint32(src[4*i:])))
		}
	case U32:
		for i := range dst {
			dst[i] = float32(le.Uint32(src[4*i:]))
		}
	case I64:
		for i := range dst {
			dst[i] = float32(int64(le.Uint64(src[8*i:])))
		}
	case U64:
		for i := range dst {
			dst[i] = float32(le.Uint64(src[8*i:]))
		}
	}
	return nil
}

// FromFloat32 encodes src as dtype d (F32, F16 or BF16, rounding to nearest even)
// and returns the little-endian bytes.
func FromFloat32(d DType, src []float32) ([]byte, error) {
	le := binary.LittleEndian
	switch d {
	case F32:
		out := make([]byte, 4*len(src))
		for i, v := range src {
			le.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out, nil
	case BF16:
		out := make([]byte, 2*len(src))
		for i, v := range src {
			le.PutUint16(out[2*i:], F32ToBF16(v))
		}
		return out, nil
	case F16:
		out := make([]byte, 2*len(src))
		for i, v := range src {
			le.PutUint16(out[2*i:], F32ToF16(v))
		}
		return out, nil
	}
	return nil, fmt.Errorf("encode float32 as %q: only F32, F16 and BF16 are float targets", string(d))
}
