package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/train/model"
)

// configDiff compares a run's saved config with the one a command gives and
// returns one line per option that differs, named by its key in
// train_config.json (dotted for nested keys, e.g. "loss.beta"):
//
//	option "lr" differs: run has 1e-5, command gives 2e-5
//
// "steps" and "epochs" are never compared (extending a run changes where it
// stops, not what each step does; a cosine schedule is then stretched from
// the next step on), nor the top-level keys in mayChange. A
// config without "dtype" was saved before the flag existed, with float32
// weights; one without a key of addedLater was saved before that key
// existed, and the key is not compared. The paths of pathKeys compare by
// the files they name, not their spelling (samePaths); "inputs", where
// both configs record equal inputs_sha256, by those contents alone;
// --chat-template-kwargs by its JSON value (sameJSONText) and --targets
// by the modules it names (sameTargets). Configs that are not JSON objects
// differ as a whole.
func configDiff(saved, now []byte, mayChange ...string) []string {
	var x, y map[string]any
	if err := json.Unmarshal(saved, &x); err != nil {
		return []string{fmt.Sprintf("the run's saved config is not a JSON object: %v", err)}
	}
	if err := json.Unmarshal(now, &y); err != nil {
		return []string{fmt.Sprintf("the command's config is not a JSON object: %v", err)}
	}
	for _, k := range addedLater {
		if _, ok := x[k]; !ok {
			delete(y, k)
		}
	}
	// Inputs known by their contents (sft's inputs_sha256) are the same
	// inputs under other paths (the data folder moved, or mounted
	// elsewhere), as grpo takes a session's files by sha256.
	if sum, ok := x[inputsSHAKey]; ok && reflect.DeepEqual(sum, y[inputsSHAKey]) {
		x["inputs"] = y["inputs"]
	}
	for _, k := range pathKeys {
		if samePaths(x[k], y[k]) {
			x[k] = y[k]
		}
	}
	if sameJSONText(x[kwargsKey], y[kwargsKey]) {
		x[kwargsKey] = y[kwargsKey]
	}
	if sameTargets(x[targetsKey], y[targetsKey]) {
		x[targetsKey] = y[targetsKey]
	}
	for _, m := range []map[string]any{x, y} {
		if _, ok := m["dtype"]; !ok {
			m["dtype"] = string(model.DTypeFloat32)
		}
		for _, k := range append([]string{"steps", "epochs"}, mayChange...) {
			delete(m, k)
		}
	}
	var out []string
	diffValues("", x, y, &out)
	return out
}

// addedLater are the config keys that runs saved before them lack:
// sft's inputs_sha256 (the inputs' contents, compared on a resume since
// Dec 2026).
var addedLater = []string{inputsSHAKey}

// inputsSHAKey is the config key of sft's inputs' sha256, in order.
const inputsSHAKey = "inputs_sha256"

// pathKeys are the config keys that hold local paths as the command
// spelled them: "./m", "m/" and "m" name one folder, and so does its
// absolute path, which a cron job gives where the run was started by hand
// with a relative one. They compare by the folder they name (samePaths),
// not by their spelling.
var pathKeys = []string{"model", "out", "init_adapter", "inputs"}

// samePaths reports whether two config values, each a path or a list of
// paths, name the same local files in the same order: equal once cleaned
// (filepath.Clean), or once made absolute from the working directory. A
// URL (s3://…, file://…) or a value of another shape is equal only as
// written, but for the secrets of a URL's query (fileset.RedactURL).
func samePaths(a, b any) bool {
	same := func(p, q string) bool {
		// A URL recorded before its endpoint's password was masked in
		// train_config.json, or with a password rotated since, names the
		// same store.
		if p == q || fileset.RedactURL(p) == fileset.RedactURL(q) {
			return true
		}
		if strings.Contains(p, "://") || strings.Contains(q, "://") || p == "" || q == "" || p == "-" || q == "-" {
			return false
		}
		if filepath.Clean(p) == filepath.Clean(q) {
			return true
		}
		ap, errp := filepath.Abs(p)
		aq, errq := filepath.Abs(q)
		return errp == nil && errq == nil && ap == aq
	}
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && same(a, b)
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			p, pok := a[i].(string)
			q, qok := b[i].(string)
			if !pok || !qok || !same(p, q) {
				return false
			}
		}
		return true
	}
	return false
}

// kwargsKey is the config key of --chat-template-kwargs, saved as the
// JSON text the command was given. The kwargs rows record
// (trajectory.MetadataKeyChatTemplateKwargs, each row laid out under its
// own: RowKwargs) are not saved: they are part of the input files, which a
// resume identifies by their sha256 (grpo's sessions, sft's
// inputs_sha256), so a resume on the same files lays every row out as
// before and only the flag, which lays out the rows without a record, can
// change a row's prompt. Other files are other data, each row under its
// own record again. Where every row read records its own, the flag lays
// out none, and the job lets a resume change it (RowKwargs.MayChange).
const kwargsKey = "chat_template_kwargs"

// kwargsIdleKey is the config key of Options.KwargsIdle: a record of the
// run's calls, not an option, so never compared.
const kwargsIdleKey = "chat_template_kwargs_idle"

// sameJSONText reports whether a and b are strings holding equal JSON
// values: {"enable_thinking":false} and { "enable_thinking": false } give
// the template the same kwargs, whatever their spacing or key order.
func sameJSONText(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok || !bok {
		return false
	}
	var av, bv any
	if json.Unmarshal([]byte(as), &av) != nil || json.Unmarshal([]byte(bs), &bv) != nil {
		return false
	}
	return reflect.DeepEqual(av, bv)
}

// targetsKey is the config key of --targets.
const targetsKey = "targets"

// sameTargets reports whether a and b are lists of projection names that
// name the same set of modules (model.ParseModule): "q" is q_proj, and the
// order is not the adapter's (NewAdapter draws its weights in module
// order), so --targets q,v and --targets v_proj,q_proj make one adapter.
func sameTargets(a, b any) bool {
	set := func(v any) (map[model.Module]bool, bool) {
		list, ok := v.([]any)
		if !ok {
			return nil, false
		}
		out := map[model.Module]bool{}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			m, err := model.ParseModule(s)
			if err != nil {
				return nil, false
			}
			out[m] = true
		}
		return out, true
	}
	as, aok := set(a)
	bs, bok := set(b)
	return aok && bok && maps.Equal(as, bs)
}

// backendKeys are the config keys of the backend configuration (Options'
// Device, Compute and Threads): a resume may change them, and is told
// (backendChanges), since the steps may round differently there.
func backendKeys() []string { return []string{"device", "compute", "threads"} }

// backendChange is a backend key whose value the run's saved config and
// the command's differ in, both shown as JSON.
type backendChange struct{ key, run, now string }

// backendChanges lists the backend keys whose values differ between the
// run's saved config and the command's. A key the saved config lacks (a
// run saved before it, or by a library caller that left it empty) is no
// change: nothing is known of it. The thread count is compared only when
// both sides run on the CPU, the one backend that uses it.
func backendChanges(saved, now []byte) []backendChange {
	var x, y map[string]any
	if json.Unmarshal(saved, &x) != nil || json.Unmarshal(now, &y) != nil {
		return nil // configDiff reports configs that are not JSON objects
	}
	device := func(m map[string]any) any {
		if d, ok := m["device"]; ok {
			return d
		}
		return "cpu" // the flag's default
	}
	var out []backendChange
	for _, k := range backendKeys() {
		a, ain := x[k]
		b, bin := y[k]
		if !ain || !bin || reflect.DeepEqual(a, b) {
			continue
		}
		if k == "threads" && (device(x) != "cpu" || device(y) != "cpu") {
			continue
		}
		out = append(out, backendChange{key: k, run: showValue(a), now: showValue(b)})
	}
	return out
}

// diffValues appends a line for each leaf where a (the run's) and b (the
// command's) differ; objects are compared key by key.
func diffValues(key string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := slices.Sorted(maps.Keys(am))
		for _, k := range slices.Sorted(maps.Keys(bm)) {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			sub := k
			if key != "" {
				sub = key + "." + k
			}
			av, ain := am[k]
			bv, bin := bm[k]
			switch {
			case !ain:
				*out = append(*out, fmt.Sprintf("option %q differs: run has it unset, command gives %s", sub, showKeyed(sub, bv)))
			case !bin:
				*out = append(*out, fmt.Sprintf("option %q differs: run has %s, command leaves it unset", sub, showKeyed(sub, av)))
			default:
				diffValues(sub, av, bv, out)
			}
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, fmt.Sprintf("option %q differs: run has %s, command gives %s", key, showKeyed(key, a), showKeyed(key, b)))
	}
}

// showKeyed is showValue for the value of config key key, except that
// --chat-template-kwargs, saved as the JSON text the flag was given, is
// shown as that JSON (compact), which can be typed back as the flag,
// rather than as a string of escaped quotes.
func showKeyed(key string, v any) string {
	if s, ok := v.(string); ok && key == kwargsKey {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(s)) == nil {
			return buf.String()
		}
	}
	return showValue(v)
}

// showValue writes a config value as a user would type it: numbers in the
// shortest form (1e-5, not 0.00001 or 1e-05), strings quoted, lists and
// objects as compact JSON.
func showValue(v any) string {
	switch v := v.(type) {
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if i := strings.IndexAny(s, "e"); i >= 0 {
			mant, exp := s[:i+1], s[i+1:]
			sign := ""
			if exp[0] == '-' || exp[0] == '+' {
				if exp[0] == '-' {
					sign = "-"
				}
				exp = exp[1:]
			}
			s = mant + sign + strings.TrimLeft(exp, "0")
		}
		return s
	case nil:
		return "null"
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}
