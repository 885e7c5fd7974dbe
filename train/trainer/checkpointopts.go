package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/train/checkpoint"
)

// checkpointKeys are the config keys of --save-every, --keep-last,
// --best-metric and --best-mode: which steps are saved, which are kept
// and which is named best. None of them changes what a step computes (a
// step depends only on the restored state and its number), so a resume
// may change them, as ART's delete_checkpoints takes any metric at any
// time; Setup records the new values in the run's saved config and
// prunes by them (applyCheckpointChanges).
func checkpointKeys() []string {
	return []string{"save_every", "keep_last", "best_metric", "best_mode"}
}

// checkpointFlags are the flags of checkpointKeys, for the refusal that
// says which options a resume may change.
const checkpointFlags = "--save-every, --keep-last, --best-metric and --best-mode"

// checkpointChange is a checkpoint option whose value the run's saved
// config and the command's differ in, both as a user would type them.
type checkpointChange struct{ key, run, now string }

// checkpointChanges lists the checkpoint keys whose values differ between
// the run's saved config and the command's. best_metric is saved only when
// set, so a config without it has none (""); another key a config lacks
// (saved before the key existed) is shown as unset.
func checkpointChanges(saved, now []byte) []checkpointChange {
	var x, y map[string]any
	if json.Unmarshal(saved, &x) != nil || json.Unmarshal(now, &y) != nil {
		return nil // configDiff reports configs that are not JSON objects
	}
	show := func(v any, in bool) string {
		if !in {
			return "unset"
		}
		return showValue(v)
	}
	var out []checkpointChange
	for _, k := range checkpointKeys() {
		a, ain := x[k]
		b, bin := y[k]
		if k == "best_metric" {
			if !ain {
				a, ain = "", true
			}
			if !bin {
				b, bin = "", true
			}
		}
		if ain == bin && reflect.DeepEqual(a, b) {
			continue
		}
		out = append(out, checkpointChange{key: k, run: show(a, ain), now: show(b, bin)})
	}
	return out
}

// applyCheckpointChanges makes a resume's checkpoint options the run's
// when they differ from its saved ones (checkpointChanges): it records
// the command's values in step last's train_config.json, the config that
// hone-inspect log-eval and report read and the next resume compares
// with; then, when --keep-last, --best-metric or --best-mode changed, it
// names the best step again by the new metric and mode from what the run
// has recorded (each kept step's metrics row, eval.jsonl) and prunes by
// the new --keep-last, never latest, the best step, nor with an eval
// metric a step not yet evaluated (checkpoint.Run.Prune). It logs one line
// naming each changed option with the run's value and the command's. The
// config is written first, so that a kill before the prune leaves a run
// that the next log-eval or save prunes by the new options; the pruning
// was asked for, and left undone the run keeps steps the user meant to
// drop. The saved config's other keys keep their values: "inputs", for
// one, names a session the run knows by them.
func applyCheckpointChanges(run *checkpoint.Run, last int, saved, now []byte, o *Options, log *slog.Logger) error {
	changes := checkpointChanges(saved, now)
	if len(changes) == 0 {
		return nil
	}
	cfg, err := withKeys(saved, now, checkpointKeys())
	if err != nil {
		return fmt.Errorf("resume %s: record the new checkpoint options in %s's %s: %w", run.Dir, runfolder.StepName(last), checkpoint.ConfigName, err)
	}
	if err := run.WriteConfig(last, cfg); err != nil {
		return err
	}
	attrs := []any{"run", run.Dir}
	prune, rebest := false, false
	for _, c := range changes {
		attrs = append(attrs, c.key, c.run+" -> "+c.now)
		prune = prune || c.key != "save_every"
		rebest = rebest || c.key == "best_metric" || c.key == "best_mode"
	}
	if rebest {
		// The pointer named the best by the old metric or mode: the new
		// ones name their own (Prune), or none until a step has a value.
		if _, _, err := run.DropBest(); err != nil {
			return err
		}
	}
	if prune {
		if err := run.Prune(o.KeepLast, o.BestMetric, o.BestMode == "max"); err != nil {
			return err
		}
		best := "none"
		if b, ok, err := run.Best(); err != nil {
			return err
		} else if ok {
			best = runfolder.StepName(b)
		}
		attrs = append(attrs, "best", best)
	}
	if log != nil {
		log.Info("resuming with other checkpoint options: the run's saved config records them, and its steps are kept by them", attrs...)
	}
	return nil
}

// withKeys returns the JSON object saved with the values of keys taken
// from now (a key now lacks is removed, as Save leaves out an empty
// best_metric; one saved lacks is added last), written as Save writes a
// config (two-space indent, a newline at the end) with the other keys in
// their saved order and values.
func withKeys(saved, now []byte, keys []string) ([]byte, error) {
	var fromNow map[string]json.RawMessage
	if err := json.Unmarshal(now, &fromNow); err != nil {
		return nil, fmt.Errorf("the command's config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(saved))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("the saved config is not a JSON object")
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	n := 0
	write := func(k string, v json.RawMessage) error {
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		key, err := json.Marshal(k)
		if err != nil {
			return err
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, v); err != nil {
			return fmt.Errorf("key %s: %w", key, err)
		}
		buf.WriteString("\n  ")
		buf.Write(key)
		buf.WriteString(": ")
		return json.Indent(&buf, compact.Bytes(), "  ", "  ")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("the saved config: %w", err)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("the saved config: key %q: %w", k, err)
		}
		if slices.Contains(keys, k) {
			seen[k] = true
			nv, ok := fromNow[k]
			if !ok {
				continue
			}
			v = nv
		}
		if err := write(k, v); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		if v, ok := fromNow[k]; ok && !seen[k] {
			if err := write(k, v); err != nil {
				return nil, err
			}
		}
	}
	if n > 0 {
		buf.WriteByte('\n')
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}
