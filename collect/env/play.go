package env

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/hone-rl/hone/format/trajectory"
)

// PlayResult is what Play recorded of one episode.
type PlayResult struct {
	Messages []trajectory.Message
	Tools    []trajectory.Tool
	Outcome  Outcome
	Done     bool // the episode said done; false when maxTurns stopped it
}

// Play runs one episode with policy p: reset, then turn after turn, the
// policy's message is appended, its tool calls are checked (CheckCall) and
// the malformed ones answered with the reason, the rest handed with the
// turn to the episode, and the episode's answer appended — until the episode
// is done or maxTurns assistant turns were taken (0: no limit).
//
// A policy error that wraps ErrContextFull after the first turn ends the
// episode the same way, without an error: the conversation outgrew the
// model's context, and the turns taken are as good as those of an episode
// maxTurns cut. On the first turn it is an error: the environment's
// opening alone does not fit, and there is no turn to keep.
//
// Besides the episode's own metrics the outcome carries assistant_turns,
// tool_calls, malformed_tool_calls and truncated (1 when maxTurns or a full
// context stopped it, 0 when it ended done or with an error). On error the
// result holds what was recorded so far.
func Play(ctx context.Context, ep Episode, p Policy, maxTurns int) (PlayResult, error) {
	var res PlayResult
	obs, err := ep.Reset(ctx)
	if err != nil {
		return res, fmt.Errorf("reset: %w", err)
	}
	res.Messages = append(res.Messages, obs.Messages...)
	res.Tools = obs.Tools
	var turns, calls, malformed int
	// truncated: maxTurns ended the episode before it was done (not an
	// error, which ends it too and is the row's error).
	finish := func(truncated bool) {
		o := ep.Outcome()
		m := make(map[string]float64, len(o.Metrics)+4)
		maps.Copy(m, o.Metrics)
		m["assistant_turns"] = float64(turns)
		m["tool_calls"] = float64(calls)
		m["malformed_tool_calls"] = float64(malformed)
		m["truncated"] = 0
		if truncated {
			m["truncated"] = 1
		}
		res.Outcome = Outcome{Reward: o.Reward, Metrics: m}
	}
	for maxTurns <= 0 || turns < maxTurns {
		if err := ctx.Err(); err != nil {
			finish(false)
			return res, err
		}
		msg, err := p.Act(ctx, res.Messages, res.Tools)
		if err != nil && turns > 0 && ctx.Err() == nil && errors.Is(err, ErrContextFull) {
			break
		}
		if err != nil {
			finish(false)
			return res, fmt.Errorf("turn %d: policy: %w", turns+1, err)
		}
		msg.Role = "assistant"
		res.Messages = append(res.Messages, msg)
		turns++
		// Malformed calls are answered here, in call order, with the
		// reason; the rest go to the episode.
		reasons := make(map[int]string)
		var good []trajectory.ToolCall
		for i, c := range msg.ToolCalls {
			calls++
			if _, err := CheckCall(c, res.Tools); err != nil {
				malformed++
				reasons[i] = "error: " + err.Error()
				continue
			}
			good = append(good, c)
		}
		fb, err := ep.Step(ctx, Turn{Message: msg, Calls: good})
		if err != nil {
			finish(false)
			return res, fmt.Errorf("turn %d: step: %w", turns, err)
		}
		// The tool results of each call id, in the episode's order: a
		// server may give two calls one id (or none, ""), and each call
		// then takes the next result of its id.
		byID := make(map[string][]int) // indices into fb.Messages
		var rest []trajectory.Message
		for k, m := range fb.Messages {
			if m.Role == "tool" {
				byID[m.ToolCallID] = append(byID[m.ToolCallID], k)
			} else {
				rest = append(rest, m)
			}
		}
		used := make([]bool, len(fb.Messages))
		for i, c := range msg.ToolCalls {
			if r, ok := reasons[i]; ok {
				res.Messages = append(res.Messages, ToolResult(c.ID, c.Name, r))
			} else if q := byID[c.ID]; len(q) > 0 {
				res.Messages = append(res.Messages, fb.Messages[q[0]])
				used[q[0]], byID[c.ID] = true, q[1:]
			} else if !fb.Done {
				res.Messages = append(res.Messages, ToolResult(c.ID, c.Name, "error: the environment gave no result for this call"))
			}
		}
		for k, m := range fb.Messages { // tool results no call took, in order
			if m.Role == "tool" && !used[k] {
				res.Messages = append(res.Messages, m)
			}
		}
		res.Messages = append(res.Messages, rest...)
		if fb.Done {
			res.Done = true
			break
		}
	}
	finish(!res.Done)
	return res, nil
}
