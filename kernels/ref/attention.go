package ref

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// AttentionForward: causal GQA within each packed sequence. out [N,H,D],
// lse [N,H], q [N,H,D], k/v [N,KVH,D], seqOff [S+1].
func (Backend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	op := "AttentionForward"
	kernels.NeedAttentionForward(op, out, lse, q, k, v, seqOff, N, H, KVH, D)
	for s := 0; s+1 < len(seqOff); s++ {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		attend(out[lo*H*D:hi*H*D], lse[lo*H:hi*H], q[lo*H*D:hi*H*D], k[lo*KVH*D:hi*KVH*D], v[lo*KVH*D:hi*KVH*D], hi-lo, hi-lo, H, KVH, D, 0, scale)
	}
}

// AttentionWindowForward: AttentionForward where query i sees keys
// i−W < j ≤ i of its sequence.
func (Backend) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	op := "AttentionWindowForward"
	kernels.NeedWindow(op, W)
	kernels.NeedAttentionForward(op, out, lse, q, k, v, seqOff, N, H, KVH, D)
	for s := 0; s+1 < len(seqOff); s++ {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		attend(out[lo*H*D:hi*H*D], lse[lo*H:hi*H], q[lo*H*D:hi*H*D], k[lo*KVH*D:hi*KVH*D], v[lo*KVH*D:hi*KVH*D], hi-lo, hi-lo, H, KVH, D, W, scale)
	}
}

// AttentionDecode: Tq new queries [Tq,H,D] against the cache [Tk,KVH,D].
func (Backend) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	op := "AttentionDecode"
	kernels.NeedAttentionDecode(op, out, q, kCache, vCache, Tq, Tk, H, KVH, D)
	attend(out, nil, q, kCache, vCache, Tq, Tk, H, KVH, D, 0, scale)
}

// AttentionDecodeBatch: each sequence's new keys and values appended to
// its cache, then its new queries against the cache (attend, windowed when
// W > 0).
func (Backend) AttentionDecodeBatch(out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	tk := kernels.NeedAttentionDecodeBatch("AttentionDecodeBatch", out, q, k, v, kCache, vCache, seqOff, N, H, KVH, D, W)
	qd, kvd := H*D, KVH*D
	for s := range tk {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		Tq, Tk := hi-lo, tk[s]
		copy(kCache[s][(Tk-Tq)*kvd:Tk*kvd], k[lo*kvd:hi*kvd])
		copy(vCache[s][(Tk-Tq)*kvd:Tk*kvd], v[lo*kvd:hi*kvd])
		if Tq > 0 {
			attend(out[lo*qd:hi*qd], nil, q[lo*qd:hi*qd], kCache[s], vCache[s], Tq, Tk, H, KVH, D, W, scale)
		}
	}
}

// attend: query i of Tq sees key rows 0 … Tk−Tq+i, or with a window W > 0
// only the last W of them. lse may be nil.
func attend(out, lse, q, k, v []float32, Tq, Tk, H, KVH, D, W int, scale float32) {
	group := H / KVH
	p := make([]float64, Tk) // scores of one query row
	for i := 0; i < Tq; i++ {
		last := Tk - Tq + i
		first := 0
		if W > 0 {
			first = max(0, last-W+1)
		}
		for h := 0; h < H; h++ {
			kh := h / group
			qi := q[(i*H+h)*D : (i*H+h+1)*D] // [D]
			m := math.Inf(-1)
			for j := first; j <= last; j++ {
				p[j] = float64(scale) * dot(qi, k[(j*KVH+kh)*D:(j*KVH+kh+1)*D])
				m = math.Max(m, p[j])
			}
			var sum float64
			for j := first; j <= last; j++ {
				p[j] = math.Exp(p[j] - m)
				sum += p[j]
			}
			if lse != nil {
				lse[i*H+h] = float32(m + math.Log(sum))
			}
			for d := 0; d < D; d++ {
				var o float64
				for j := first; j <= last; j++ {
					o += p[j] * float64(v[(j*KVH+kh)*D+d])
				}
				out[(i*H+h)*D+d] = float32(o / sum)
			}
		}
	}
}

// AttentionBackward accumulates dq [N,H,D], dk and dv [N,KVH,D].
func (Backend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	attentionBackward("AttentionBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, 0, scale)
}

// AttentionWindowBackward accumulates the gradients of AttentionWindowForward.
func (Backend) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowBackward", W)
	attentionBackward("AttentionWindowBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
}

// attentionBackward is AttentionBackward, over the last W keys when W > 0.
func attentionBackward(op string, dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedAttentionBackward(op, dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	group := H / KVH
	for s := 0; s+1 < len(seqOff); s++ {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		for i := lo; i < hi; i++ {
			for h := 0; h < H; h++ {
				kh := h / group
				qi := q[(i*H+h)*D : (i*H+h+1)*D]     // [D]
				doi := dout[(i*H+h)*D : (i*H+h+1)*D] // [D]
				delta := dot(doi, out[(i*H+h)*D:(i*H+h+1)*D])
				first := lo
				if W > 0 {
					first = max(lo, i-W+1)
				}
				for j := first; j <= i; j++ {
					kj := k[(j*KVH+kh)*D : (j*KVH+kh+1)*D] // [D]
					vj := v[(j*KVH+kh)*D : (j*KVH+kh+1)*D] // [D]
					pij := math.Exp(float64(scale)*dot(qi, kj) - float64(lse[i*H+h]))
					dS := pij * (dot(doi, vj) - delta)
					for d := 0; d < D; d++ {
						dv[(j*KVH+kh)*D+d] += float32(pij * float64(doi[d]))
						dq[(i*H+h)*D+d] += float32(float64(scale) * dS * float64(kj[d]))
						dk[(j*KVH+kh)*D+d] += float32(float64(scale) * dS * float64(qi[d]))
					}
				}
			}
		}
	}
}
