package collect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// ReadScenarios reads scenarios from path, a file or URL taken as it is: a
// Parquet trajectory file (its distinct scenarios, in order of first
// appearance; a row's env names the environment only when it is a
// built-in one, as a stdio program's own name is not) or JSON lines with
// the fields id, environment, payload (any JSON value) and split. A name
// ending in .parquet (without the query an object-store URL carries,
// s3://b/round.parquet?region=…) is read as Parquet with ranged reads;
// any other name, stdin ("-") and a pipe included, by what it holds: a
// file starting with Parquet's magic "PAR1" is Parquet, else JSON lines.
func ReadScenarios(ctx context.Context, path string) ([]env.Scenario, error) {
	if fileset.HasExt(path, ".parquet") {
		in := fileset.Files(path)
		defer in.Close() // its bucket, when path is an object
		return scenariosFromParquet(ctx, path, in)
	}
	open := path
	if path == fileset.Stdin {
		// Standard input, as "-" is for every stage's inputs: read through
		// its name, which fileset copies when it is a pipe.
		open = "/dev/stdin"
	}
	f, err := fileset.Open(ctx, open)
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	defer f.Close()
	if trajectory.StartsWithMagic(f) {
		// A trajectory file under another name, on stdin or through a
		// pipe (bash's <(…)), as the inputs of every stage may be: the
		// copy fileset made of a pipe is read whole, once.
		b, err := io.ReadAll(f.Reader())
		if err != nil {
			return nil, fmt.Errorf("scenarios %s: %w", fileset.DisplayName(path), err)
		}
		return scenariosFromParquet(ctx, path, fileset.Held([]string{path}, [][]byte{b}))
	}
	// Errors name the file as the user does: an object's query
	// (endpoint=…) would stand between its name and the line number.
	return DecodeScenarios(f.Reader(), fileset.DisplayName(path))
}

// scenariosFromParquet reads the distinct scenarios of a trajectory file,
// in order of first appearance.
func scenariosFromParquet(ctx context.Context, path string, in *fileset.Set) ([]env.Scenario, error) {
	groups, err := trajectory.ReadAll(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("scenarios %s: %w", fileset.DisplayName(path), err)
	}
	var out []env.Scenario
	seen := map[string]bool{}
	for _, g := range groups {
		for _, t := range g.Trajectories {
			if t.ScenarioID == "" || seen[t.ScenarioID] {
				continue
			}
			seen[t.ScenarioID] = true
			sc := env.Scenario{ID: t.ScenarioID, Split: t.Split}
			// A row's env is the name the environment gave itself: a
			// stdio program's (hello's "name") is none of the built-in
			// ones, and is left to --env.
			if slices.Contains(EnvNames(), t.Env) {
				sc.Env = t.Env
			}
			if t.Payload != "" {
				sc.Payload = json.RawMessage(t.Payload)
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// DecodeScenarios reads JSON-lines scenarios from r; name labels errors.
func DecodeScenarios(r io.Reader, name string) ([]env.Scenario, error) {
	var out []env.Scenario
	seen := map[string]int{}
	br := bufio.NewReader(r)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if line == 1 {
			// A Windows tool (PowerShell 5's Out-File -Encoding utf8,
			// Notepad's UTF-8 with BOM) starts the file with a byte-order
			// mark, no part of the first line, as hone-inspect from-jsonl
			// reads it.
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		if len(bytes.TrimSpace(b)) > 0 {
			var sc env.Scenario
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&sc); err != nil {
				return nil, fmt.Errorf("%s:%d: %w (want {\"id\", \"environment\", \"payload\", \"split\"})", name, line, err)
			}
			// One object a line: what follows it (a second object, a
			// comma) would otherwise be dropped unread.
			if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
				return nil, fmt.Errorf("%s:%d: %.40q after the scenario object: want one object a line", name, line, rest)
			}
			if sc.ID == "" {
				return nil, fmt.Errorf("%s:%d: scenario without an id", name, line)
			}
			if prev, ok := seen[sc.ID]; ok {
				return nil, fmt.Errorf("%s:%d: scenario id %q already on line %d", name, line, sc.ID, prev)
			}
			switch sc.Split {
			case "", trajectory.SplitTrain, trajectory.SplitVal, trajectory.SplitTest:
			default:
				return nil, fmt.Errorf("%s:%d: split %q is not train, val or test", name, line, sc.Split)
			}
			if string(sc.Payload) == "null" {
				sc.Payload = nil
			}
			seen[sc.ID] = line
			out = append(out, sc)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
}
