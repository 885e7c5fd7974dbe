package trainer

import "math/rand/v2"

// Order maps training steps to data items: the N items are visited in a
// fresh permutation per epoch (seeded by Seed and the epoch), and step s
// takes positions [s·PerStep, (s+1)·PerStep) of that endless sequence. A
// step's items depend only on (N, PerStep, Seed, s), so a resumed run sees
// exactly the data an uninterrupted one would.
type Order struct {
	N, PerStep int
	Seed       uint64
}

// Items returns the item indices of step s.
func (o Order) Items(s int) []int {
	out := make([]int, 0, o.PerStep)
	var perm []int
	epoch := -1
	for p := s * o.PerStep; p < (s+1)*o.PerStep; p++ {
		if e := p / o.N; e != epoch {
			epoch = e
			perm = rand.New(rand.NewPCG(o.Seed, uint64(e))).Perm(o.N)
		}
		out = append(out, perm[p%o.N])
	}
	return out
}

// StepsFor is the number of steps covering epochs passes over the items.
func (o Order) StepsFor(epochs int) int {
	return (epochs*o.N + o.PerStep - 1) / o.PerStep
}
