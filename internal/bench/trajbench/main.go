//go:build unix

// Command trajbench measures trajectory file throughput and memory: it
// writes synthetic trajectories (6 messages, about 300 sampled tokens each,
// groups of 8) and reads them back, each phase in a child process of its
// own so that the child's peak RSS (getrusage ru_maxrss) belongs to that
// phase alone. Reading is measured at several file sizes to show that the
// reader's memory follows the row group, not the file.
//
//	go run ./internal/bench/trajbench                       # 100k write; read 25k and 100k
//	go run ./internal/bench/trajbench --rows 2000 --read-rows 500,2000
//
// It builds on Unix only: its measurements read getrusage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/spf13/pflag"
)

type options struct {
	rows      int
	readRows  []int
	groupSize int
	rowGroup  int64
	dir       string
	keep      bool
	// child modes
	phase string
	file  string
}

// result is what a child prints on stdout as one JSON object.
type result struct {
	Rows    int64   `json:"rows"`
	Tokens  int64   `json:"tokens"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

func main() {
	var o options
	fs := pflag.NewFlagSet("trajbench", pflag.ContinueOnError)
	fs.IntVar(&o.rows, "rows", 100_000, "trajectories to write (the write measurement)")
	fs.IntSliceVar(&o.readRows, "read-rows", []int{25_000, 100_000}, "file sizes, in trajectories, to measure reading at")
	fs.IntVar(&o.groupSize, "group-size", 8, "trajectories per group")
	fs.Int64Var(&o.rowGroup, "row-group-bytes", trajectory.DefaultRowGroupBytes, "writer row group threshold")
	fs.StringVar(&o.dir, "dir", "", "where to put the files (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the files")
	fs.StringVar(&o.phase, "phase", "", "internal: run one phase (write or read) in this process")
	fs.StringVar(&o.file, "file", "", "internal: the file of the phase")
	fs.MarkHidden("phase")
	fs.MarkHidden("file")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch o.phase {
	case "":
		err = run(ctx, o)
	case "write":
		err = child(func() (result, error) { return writePhase(ctx, o) })
	case "read":
		err = child(func() (result, error) { return readPhase(ctx, o.file) })
	default:
		err = fmt.Errorf("unknown phase %q", o.phase)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trajbench:", err)
		os.Exit(1)
	}
}

func child(f func() (result, error)) error {
	r, err := f()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// run writes one file per size and reads each back, every phase in a child.
func run(ctx context.Context, o options) error {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "trajbench-")
		if err != nil {
			return err
		}
		dir = d
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	sizes := slices.Clone(o.readRows)
	if !slices.Contains(sizes, o.rows) {
		sizes = append(sizes, o.rows)
	}
	slices.Sort(sizes)
	fmt.Printf("trajbench: %d messages and ~300 sampled tokens per trajectory, groups of %d, row groups of %d MiB, zstd\n",
		6, o.groupSize, o.rowGroup>>20)
	fmt.Printf("%-6s %9s %9s %11s %9s %9s %9s %12s\n", "phase", "rows", "file MB", "rows/s", "MB/s", "wall s", "CPU s", "peak RSS MB")
	for _, n := range sizes {
		path := filepath.Join(dir, fmt.Sprintf("traj-%d.parquet", n))
		if n == o.rows || slices.Contains(o.readRows, n) {
			wr, use, err := spawn(ctx, "--phase=write", "--file="+path, "--rows="+strconv.Itoa(n),
				"--group-size="+strconv.Itoa(o.groupSize), "--row-group-bytes="+strconv.FormatInt(o.rowGroup, 10))
			if err != nil {
				return err
			}
			if n == o.rows {
				report("write", wr, use)
			}
		}
		if slices.Contains(o.readRows, n) {
			rd, use, err := spawn(ctx, "--phase=read", "--file="+path)
			if err != nil {
				return err
			}
			if rd.Rows != int64(n) || rd.Tokens != int64(n)*300 {
				return fmt.Errorf("read back %d rows and %d tokens from %s, want %d and %d", rd.Rows, rd.Tokens, path, n, n*300)
			}
			report("read", rd, use)
		}
	}
	return nil
}

// usage is what getrusage says about a finished child.
type usage struct {
	maxRSSKiB int64
	cpu       time.Duration // user + system
}

// report prints one phase. Rates are over wall time; on a busy machine
// compare the CPU column too.
func report(phase string, r result, u usage) {
	mb := float64(r.Bytes) / 1e6
	fmt.Printf("%-6s %9d %9.1f %11.0f %9.1f %9.2f %9.2f %12.1f\n", phase, r.Rows, mb,
		float64(r.Rows)/r.Seconds, mb/r.Seconds, r.Seconds, u.cpu.Seconds(), float64(u.maxRSSKiB)/1024)
}

// spawn re-runs this binary with args and returns the child's result and
// resource usage.
func spawn(ctx context.Context, args ...string) (result, usage, error) {
	self, err := os.Executable()
	if err != nil {
		return result{}, usage{}, err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, usage{}, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		return result{}, usage{}, fmt.Errorf("%s: output %q: %w", strings.Join(args, " "), out, err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return r, usage{}, errors.New("no rusage for the child on this platform")
	}
	// Linux reports ru_maxrss in KiB.
	return r, usage{maxRSSKiB: ru.Maxrss, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

var words = strings.Fields(`the a board move player win lose draw tool call result search file open read
write value error token model reward step group agent policy adapter score judge turn game cell row column`)

func sentence(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[rng.IntN(len(words))])
	}
	return sb.String()
}

func sampled(rng *rand.Rand, n int) ([]int32, []float32) {
	ids := make([]int32, n)
	lps := make([]float32, n)
	for i := range n {
		ids[i] = int32(rng.IntN(151_000))
		lps[i] = float32(-rng.ExpFloat64())
	}
	return ids, lps
}

// synth makes trajectory i of a benchmark file: system, user, an assistant
// tool call (150 tokens), the tool's answer, a final assistant turn (150
// tokens) and a user follow-up.
func synth(rng *rand.Rand, i, groupSize int) trajectory.Trajectory {
	g := i / groupSize
	ids1, lp1 := sampled(rng, 150)
	ids2, lp2 := sampled(rng, 150)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	return trajectory.Trajectory{
		Run: "bench", Step: int64(g % 10), Model: "qwen3-0.6b@3", Adapter: "bench/step-000003",
		ScenarioID: fmt.Sprintf("s-%d", g), Split: trajectory.SplitTrain, Payload: `{"board":"x..o..x.."}`,
		GroupID: fmt.Sprintf("g-%07d", g), ID: fmt.Sprintf("t-%08d", i), Env: "tictactoe",
		Messages: []trajectory.Message{
			{Role: "system", Content: "You play tic-tac-toe. Answer with a move."},
			{Role: "user", Content: sentence(rng, 40)},
			{Role: "assistant", Trainable: true, TokenIDs: ids1, Logprobs: lp1, FinishReason: "tool_calls",
				ContentParts: "null", AnswerModel: "qwen3-0.6b@3", Latency: 800 * time.Millisecond,
				ToolCalls: []trajectory.ToolCall{{ID: "call_1", Type: "function", Name: "move", Arguments: `{"cell": 4}`}}},
			{Role: "tool", ToolCallID: "call_1", Content: sentence(rng, 20)},
			{Role: "assistant", Trainable: true, TokenIDs: ids2, Logprobs: lp2, FinishReason: "stop",
				Content: sentence(rng, 110), AnswerModel: "qwen3-0.6b@3", Latency: 900 * time.Millisecond},
			{Role: "user", Content: sentence(rng, 10)},
		},
		Tools:     []trajectory.Tool{{Type: "function", Name: "move", Parameters: `{"type":"object","properties":{"cell":{"type":"integer"}}}`}},
		Reward:    trajectory.Float64(rng.Float64()),
		Metrics:   map[string]float64{"turns": 3, "illegal_moves": float64(rng.IntN(2))},
		CreatedAt: now, StartedAt: now, FinishedAt: now.Add(2 * time.Second),
	}
}

func writePhase(ctx context.Context, o options) (result, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Generate while writing, a group at a time, as hone-collect would; the
	// clock includes generation, which is small next to encoding.
	f, err := os.Create(o.file)
	if err != nil {
		return result{}, err
	}
	defer f.Close()
	start := time.Now()
	w := trajectory.NewWriter(f, trajectory.WriterOptions{RowGroupBytes: o.rowGroup})
	for i := 0; i < o.rows; {
		g := trajectory.Group{ID: fmt.Sprintf("g-%07d", i/o.groupSize)}
		for ; i < o.rows && len(g.Trajectories) < o.groupSize; i++ {
			g.Trajectories = append(g.Trajectories, synth(rng, i, o.groupSize))
		}
		if err := w.WriteGroup(ctx, g); err != nil {
			return result{}, err
		}
	}
	if err := w.Close(); err != nil {
		return result{}, err
	}
	if err := f.Close(); err != nil {
		return result{}, err
	}
	secs := time.Since(start).Seconds()
	st, err := os.Stat(o.file)
	if err != nil {
		return result{}, err
	}
	return result{Rows: w.Rows(), Tokens: int64(o.rows) * 300, Bytes: st.Size(), Seconds: secs}, nil
}

func readPhase(ctx context.Context, path string) (result, error) {
	start := time.Now()
	in := fileset.Files(path)
	defer in.Close()
	r, err := trajectory.Open(ctx, in)
	if err != nil {
		return result{}, err
	}
	defer r.Close()
	var res result
	for {
		g, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return result{}, err
		}
		for _, t := range g.Trajectories {
			res.Rows++
			for _, m := range t.Messages {
				res.Tokens += int64(len(m.TokenIDs))
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.Bytes = r.Files()[0].Size
	return res, nil
}
