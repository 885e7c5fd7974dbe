package report

import (
	"context"
	"fmt"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// Summary is the table at the top of the page. Has* fields say whether the
// metrics carried the key the figure comes from.
type Summary struct {
	Run       string
	Rows      int     // metrics rows (steps trained)
	FirstStep float64 // step of the first row
	LastStep  float64 // step of the last row

	HasReward   bool
	FirstReward float64 // reward_mean of the first row that has one
	LastReward  float64 // reward_mean of the last row that has one
	BestStep    float64 // step of the highest reward_mean (the first, on ties)
	BestReward  float64

	HasTokens   bool
	TotalTokens float64 // sum of "tokens" over rows

	HasSeconds  bool
	WallSeconds float64 // sum of "seconds" over rows
}

// Summarize computes the summary table of a run from its metrics.
func Summarize(run string, m *Metrics) Summary {
	s := Summary{Run: run, Rows: len(m.Steps)}
	if len(m.Steps) > 0 {
		s.FirstStep, s.LastStep = m.Steps[0], m.Steps[len(m.Steps)-1]
	}
	if r := m.Get("reward_mean"); r != nil && len(r.Y) > 0 {
		s.HasReward = true
		s.FirstReward, s.LastReward = r.Y[0], r.Y[len(r.Y)-1]
		s.BestStep, s.BestReward = r.X[0], r.Y[0]
		for i, y := range r.Y {
			if y > s.BestReward {
				s.BestStep, s.BestReward = r.X[i], y
			}
		}
	}
	if t := m.Get("tokens"); t != nil {
		s.HasTokens = true
		for _, y := range t.Y {
			s.TotalTokens += y
		}
	}
	if t := m.Get("seconds"); t != nil {
		s.HasSeconds = true
		for _, y := range t.Y {
			s.WallSeconds += y
		}
	}
	return s
}

// TrajectoryRewards reads an input set of trajectory files and returns the
// reward summary of every step, sorted by step.
func TrajectoryRewards(ctx context.Context, in *fileset.Set) ([]trajectory.StepSummary, error) {
	r, err := trajectory.Open(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("report: trajectories: %w", err)
	}
	defer r.Close()
	st, err := trajectory.ComputeStats(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("report: trajectories: %w", err)
	}
	return st.ByStep, nil
}
