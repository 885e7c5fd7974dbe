package trainer

import "math/rand/v2"

// Order maps training steps to data items. The N items are visited in a
// fresh permutation per epoch (seeded by Seed and the epoch), PerStep at a
// time; each epoch ends with a step of its own, smaller where PerStep does
// not divide N, as ART's iterate_dataset and a PyTorch DataLoader without
// drop_last end theirs. A step's items depend only on (N, PerStep, Seed,
// CrossEpochs, s), so a resumed run sees exactly the data an uninterrupted
// one would.
//
// CrossEpochs is the order of runs saved before epochs ended on a step of
// their own: step s takes positions [s·PerStep, (s+1)·PerStep) of the
// endless sequence of permutations, so a step crossing into the next epoch
// could hold one item twice. Those runs keep it when resumed
// (Options.StepsCrossEpochs).
type Order struct {
	N, PerStep  int
	Seed        uint64
	CrossEpochs bool
}

// Items returns the item indices of step s.
func (o Order) Items(s int) []int {
	if !o.CrossEpochs {
		per := o.stepsPerEpoch()
		e, j := s/per, s%per
		perm := o.perm(e)
		return perm[j*o.PerStep : min((j+1)*o.PerStep, o.N)]
	}
	out := make([]int, 0, o.PerStep)
	var perm []int
	epoch := -1
	for p := s * o.PerStep; p < (s+1)*o.PerStep; p++ {
		if e := p / o.N; e != epoch {
			epoch = e
			perm = o.perm(e)
		}
		out = append(out, perm[p%o.N])
	}
	return out
}

// perm is epoch e's permutation of the items.
func (o Order) perm(e int) []int {
	return rand.New(rand.NewPCG(o.Seed, uint64(e))).Perm(o.N)
}

// stepsPerEpoch is the number of steps of one epoch when each ends on a
// step of its own.
func (o Order) stepsPerEpoch() int { return (o.N + o.PerStep - 1) / o.PerStep }

// StepsFor is the number of steps covering epochs passes over the items.
func (o Order) StepsFor(epochs int) int {
	if !o.CrossEpochs {
		return epochs * o.stepsPerEpoch()
	}
	return (epochs*o.N + o.PerStep - 1) / o.PerStep
}
