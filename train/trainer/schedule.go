package trainer

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate at each step of a run (at each
// optimizer update with --norm art, which takes one per packed row:
// Loop.train).
//
//	constant: LR
//	warmup:   LR·min(1, (k+1)/Warmup)
//	cosine:   warmup as above, then MinLR + (LR−MinLR)·(1+cos(π·p))/2,
//	          p = (k−Warmup)/(Total−Warmup) clamped to [0, 1]
//
// with k the 0-based step (update) index and Total the planned number of
// steps (updates), as transformers' get_cosine_schedule_with_warmup takes
// num_training_steps; its warm-up starts at 0, this one at LR/Warmup, so
// that the first update trains.
type Schedule struct {
	Kind   string  `json:"kind"`
	LR     float64 `json:"lr"`
	Warmup int     `json:"warmup"`
	Total  int     `json:"total"`
	MinLR  float64 `json:"min_lr"`
}

// Validate checks the kind and the numbers.
func (s Schedule) Validate() error {
	switch s.Kind {
	case "constant", "warmup", "cosine":
	default:
		return fmt.Errorf("trainer: lr schedule %q: want constant, warmup or cosine", s.Kind)
	}
	// Each named alone, by its flag: the one message for all three named
	// none, and called the default --min-lr 0 wrong.
	if !(s.LR > 0) {
		return fmt.Errorf("--lr %v must be positive", s.LR)
	}
	if s.MinLR < 0 {
		return fmt.Errorf("--min-lr %v must not be negative", s.MinLR)
	}
	if s.Warmup < 0 {
		return fmt.Errorf("--warmup-steps %d must not be negative", s.Warmup)
	}
	if s.Kind == "cosine" && s.MinLR > s.LR {
		// The "decay" would climb from --lr to --min-lr.
		return fmt.Errorf("trainer: --min-lr %v is above --lr %v: the cosine schedule decays from --lr to --min-lr", s.MinLR, s.LR)
	}
	return nil
}

// At returns the learning rate of step (update) k, 0-based.
func (s Schedule) At(k int) float64 {
	if s.Kind == "constant" {
		return s.LR
	}
	if s.Warmup > 0 && k < s.Warmup {
		return s.LR * float64(k+1) / float64(s.Warmup)
	}
	if s.Kind == "warmup" {
		return s.LR
	}
	span := s.Total - s.Warmup
	if span <= 0 {
		return s.LR
	}
	p := math.Min(1, math.Max(0, float64(k-s.Warmup)/float64(span)))
	return s.MinLR + (s.LR-s.MinLR)*(1+math.Cos(math.Pi*p))/2
}
