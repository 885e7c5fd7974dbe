package cuda

import (
	"sort"
	"time"
)

// OpTime is what one kind of op cost while a profile ran: how many calls,
// and their wall time on the host from the op's entry to the device having
// finished it (every op ends synchronized, so that is the op's whole cost:
// argument checks, int32 edge copies, launches and the kernels themselves).
type OpTime struct {
	Op    string
	Calls int
	Total time.Duration
}

// opProfile accumulates OpTime by op name; nil when no profile runs.
type opProfile map[string]*OpTime

// StartProfile starts (or restarts, from zero) timing every op by name
// (kernels.Backend's method; the training attention ops with the kernels
// they ran: "AttentionBackward (tc2)", "(gemm)", "(tc1)" or "(f32)"). It
// is for finding where a step's time goes on a device (modelbench's
// --profile-ops); a profile costs one clock read and a map update per op.
func (b *Backend) StartProfile() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prof = opProfile{}
}

// StopProfile ends the profile and returns its figures, the costliest op
// first (nil when none ran).
func (b *Backend) StopProfile() []OpTime {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.prof
	b.prof = nil
	out := make([]OpTime, 0, len(p))
	for _, t := range p {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Op < out[j].Op
	})
	return out
}

// record adds one call of op that started at t0; b.mu is held.
func (p opProfile) record(op string, t0 time.Time) {
	if p == nil {
		return
	}
	t := p[op]
	if t == nil {
		t = &OpTime{Op: op}
		p[op] = t
	}
	t.Calls++
	t.Total += time.Since(t0)
}
