package kernels

import "fmt"

// Need panics when a buffer is shorter than its shape requires; backends call
// it before touching memory so a wrong size names the op and the buffer
// instead of corrupting memory or failing deep in a loop.
func Need(op, name string, have, want int) {
	if want < 0 {
		panic(fmt.Sprintf("kernels.%s: negative size for %s (%d)", op, name, want))
	}
	if have < want {
		panic(fmt.Sprintf("kernels.%s: %s has %d elements, shape needs %d", op, name, have, want))
	}
}

// NeedSizes panics when any size is negative.
func NeedSizes(op string, sizes ...int) {
	for _, s := range sizes {
		if s < 0 {
			panic(fmt.Sprintf("kernels.%s: negative size %d", op, s))
		}
	}
}

// NeedHeads panics unless H, KVH > 0 and KVH divides H.
func NeedHeads(op string, H, KVH int) {
	if H <= 0 || KVH <= 0 || H%KVH != 0 {
		panic(fmt.Sprintf("kernels.%s: %d query heads not a multiple of %d kv heads", op, H, KVH))
	}
}

// NeedSeqOff panics unless seqOff starts at 0, never decreases and ends at N.
func NeedSeqOff(op string, seqOff []int32, N int) {
	if len(seqOff) == 0 || seqOff[0] != 0 || int(seqOff[len(seqOff)-1]) != N {
		panic(fmt.Sprintf("kernels.%s: seqOff must run from 0 to N=%d, got %v", op, N, seqOff))
	}
	for s := 1; s < len(seqOff); s++ {
		if seqOff[s] < seqOff[s-1] {
			panic(fmt.Sprintf("kernels.%s: seqOff decreases at %d: %v", op, s, seqOff))
		}
	}
}

// NeedIDs panics unless every id is in [lo, V).
func NeedIDs(op string, ids []int32, lo, V int) {
	for n, id := range ids {
		if int(id) < lo || int(id) >= V {
			panic(fmt.Sprintf("kernels.%s: id %d at row %d outside [%d, %d)", op, id, n, lo, V))
		}
	}
}
