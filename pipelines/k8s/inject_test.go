package k8s

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParametersAreNotShell: a workflow parameter is data, never shell.
// Argo pastes {{…}} into the step's text before sh reads it, so a value
// holding a quote, a ';', a $(…), a `…` or a newline, pasted into a sh -c
// script, ran as commands in the step's pod, which holds the store's keys.
// round.yaml and cron.yaml are run here through Run, every parameter (but
// shards, which Argo's withSequence needs as a number) set to such a
// value, with recording stand-ins for the hone commands, curl and grep:
// no command of a value runs, and a single-word parameter reaches its
// command as one argument, unchanged. The *-flags parameters are split at
// whitespace into flags, each word unchanged.
func TestParametersAreNotShell(t *testing.T) {
	dir := t.TempDir()
	fakes, rec := filepath.Join(dir, "bin"), filepath.Join(dir, "rec")
	for _, d := range []string{fakes, rec} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each stand-in records its arguments, NUL-separated (a value may
	// hold a newline), in a file of its own, and succeeds: the wait
	// step's grep then ends its loop.
	fake := "#!/bin/sh\nprintf '%s\\0' \"$@\" >\"$HONE_TEST_REC/${0##*/}.$$\"\n"
	for _, name := range []string{"hone-collect", "hone-score", "hone-train", "curl", "grep"} {
		if err := os.WriteFile(filepath.Join(fakes, name), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"), "HONE_TEST_REC="+rec)
	forms := map[string]func(p string) string{
		"quote":   func(p string) string { return "x'; touch " + filepath.Join(dir, "PWNED-"+p) + "; '" },
		"dollar":  func(p string) string { return "$(touch " + filepath.Join(dir, "PWNED-"+p) + ")" },
		"tick":    func(p string) string { return "`touch " + filepath.Join(dir, "PWNED-"+p) + "`" },
		"semi":    func(p string) string { return "x;touch " + filepath.Join(dir, "PWNED-"+p) + ";" },
		"newline": func(p string) string { return "x\ntouch " + filepath.Join(dir, "PWNED-"+p) + "\n" },
	}
	for _, file := range []string{"round.yaml", "cron.yaml"} {
		r, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for form, value := range forms {
			params := map[string]string{}
			for _, p := range r.spec().Arguments.Parameters {
				params[p.Name] = value(p.Name)
			}
			if _, ok := params["shards"]; ok {
				params["shards"] = "1"
			}
			if err := os.RemoveAll(rec); err == nil {
				err = os.Mkdir(rec, 0o755)
			}
			var log strings.Builder
			err := r.Run(context.Background(), Options{Params: params, Env: env, Log: &log})
			if err != nil {
				t.Errorf("%s, %s values: %v\n%s", file, form, err, log.String())
			}
			pwned, _ := filepath.Glob(filepath.Join(dir, "PWNED-*"))
			for _, p := range pwned {
				t.Errorf("%s, %s values: a parameter ran as shell: %s was made", file, form, filepath.Base(p))
				os.Remove(p)
			}
			calls := recorded(t, rec)
			train := calls["hone-train"]
			if len(train) != 1 {
				t.Fatalf("%s, %s values: hone-train ran %d times, want 1\n%s", file, form, len(train), log.String())
			}
			if !hasPair(train[0], "--run", params["run"]) {
				t.Errorf("%s, %s values: hone-train got %q, want --run %q as one argument", file, form, train[0], params["run"])
			}
			if !hasPair(train[0], "--model", params["model-dir"]) {
				t.Errorf("%s, %s values: hone-train got %q, want --model %q as one argument", file, form, train[0], params["model-dir"])
			}
			if flags := strings.Fields(params["train-flags"]); !containsRun(train[0], flags) {
				t.Errorf("%s, %s values: hone-train got %q, want the words %q of train-flags each unchanged", file, form, train[0], flags)
			}
			if file != "round.yaml" {
				continue
			}
			collect := calls["hone-collect"]
			if len(collect) != 1 || !hasPair(collect[0], "--run", params["run"]) || !hasPair(collect[0], "--env", params["env"]) ||
				!hasPair(collect[0], "--model", params["policy-model"]) || !containsRun(collect[0], strings.Fields(params["collect-flags"])) {
				t.Errorf("%s, %s values: hone-collect got %q, want --run, --env, --model and collect-flags' words unchanged", file, form, collect)
			}
			score := calls["hone-score"]
			if len(score) != 1 || !hasPair(score[0], "--scorer", params["reward"]) || !containsRun(score[0], strings.Fields(params["score-flags"])) {
				t.Errorf("%s, %s values: hone-score got %q, want --scorer %q and score-flags' words unchanged", file, form, score, params["reward"])
			}
		}
	}
}

// recorded reads the stand-ins' records: each command's calls, each
// call's arguments.
func recorded(t *testing.T, rec string) map[string][][]string {
	t.Helper()
	ents, err := os.ReadDir(rec)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][][]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(rec, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(e.Name(), ".")
		calls[name] = append(calls[name], strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"))
	}
	return calls
}

// hasPair says whether argv has flag followed by value.
func hasPair(argv []string, flag, value string) bool {
	for i := range len(argv) - 1 {
		if argv[i] == flag && argv[i+1] == value {
			return true
		}
	}
	return false
}

// containsRun says whether words appear in argv one after another.
func containsRun(argv, words []string) bool {
	if len(words) == 0 {
		return true
	}
	for i := range argv {
		if slices.Equal(argv[i:min(i+len(words), len(argv))], words) {
			return true
		}
	}
	return false
}
