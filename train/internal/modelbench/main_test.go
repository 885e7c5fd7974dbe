package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/spf13/pflag"
)

// TestMain lets the test binary stand in for the command's worker
// subcommand, since Run starts workers through os.Executable.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := worker(context.Background(), os.Args[2:], os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if emulating.dir != "" {
		os.RemoveAll(emulating.dir)
	}
	os.Exit(code)
}

// emulating holds the emulating CUDA libraries, built once for the tests
// of this binary that run the worker on them (several seconds of g++).
var emulating struct {
	once sync.Once
	dir  string
	libs cudafake.Libs
	err  error
}

// emulatingLibs returns the emulating CUDA libraries (cudafake), building
// them on first use; without a compiler the test is skipped, unless CI is
// set.
func emulatingLibs(t *testing.T) cudafake.Libs {
	t.Helper()
	emulating.once.Do(func() {
		if emulating.dir, emulating.err = os.MkdirTemp("", "modelbench-cuda-"); emulating.err != nil {
			return
		}
		emulating.libs, emulating.err = cudafake.BuildEmulatingLibs(context.Background(), "gcc", "g++", "../../../kernels/cuda", emulating.dir)
	})
	if errors.Is(emulating.err, exec.ErrNotFound) && os.Getenv("CI") == "" {
		t.Skipf("no compiler for the emulating CUDA libraries: %v", emulating.err)
	}
	if emulating.err != nil {
		t.Fatal(emulating.err)
	}
	return emulating.libs
}

// TestRunHoneTiny runs the tiny training row for Hone through a child
// process and checks the table has a positive figure and an RSS.
func TestRunHoneTiny(t *testing.T) {
	var out bytes.Buffer
	o := Options{Quick: true, Rows: "train-tiny", Contenders: "hone", PeakSize: 256}
	if err := Run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var last string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		last = l
	}
	f := strings.Fields(last)
	if len(f) < 2 || f[0] != "train-tiny" || f[1] == "-" {
		t.Fatalf("no Hone figure in the table:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "SGEMM peak") || !strings.Contains(last, "GB") {
		t.Fatalf("report lacks the peak or the RSS:\n%s", out.String())
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, o := range []Options{
		{Rows: "nope", Contenders: "hone", Batch: 1, Seq: 1, Steps: 1, Tokens: 1, Prompt: 1},
		{Contenders: "tf", Batch: 1, Seq: 1, Steps: 1, Tokens: 1, Prompt: 1},
		{Contenders: "hone", Batch: 0, Seq: 1, Steps: 1, Tokens: 1, Prompt: 1},
	} {
		if err := Run(context.Background(), o, &bytes.Buffer{}); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestFlopsPerToken checks the counted work against a hand count of the
// 0.5B shape: 357.9M projection weights + 136.1M output weights per token.
func TestFlopsPerToken(t *testing.T) {
	c, err := shapeConfig("05b")
	if err != nil {
		t.Fatal(err)
	}
	const want = 24*(896*(896+2*128)+896*896+3*896*4864) + 151936*896
	if got := matmulParams(c); got != want {
		t.Fatalf("matmulParams = %v, want %v", got, float64(want))
	}
	o := Options{Seq: 1, Prompt: 1, Tokens: 0}
	if d := flopsPerToken(row{shape: "05b", batch: 1}, o); d != 2*want+2*2*896*24 {
		t.Fatalf("decode flops %v", d)
	}
}

// summarize keeps only the runs that gave a figure and takes their median.
func TestSummarize(t *testing.T) {
	bad := result{Err: errors.New("worker died")}
	cases := []struct {
		rs             []result
		n              int
		median, lo, hi float64
		rss            int64
	}{
		{nil, 0, 0, 0, 0, 0},
		{[]result{bad}, 0, 0, 0, 0, 0},
		{[]result{{TokensPerS: 20, RSS: 5}, bad, {TokensPerS: 12, RSS: 9}, {TokensPerS: 15, RSS: 7}}, 3, 15, 12, 20, 9},
		{[]result{{TokensPerS: 30, RSS: 1}, {TokensPerS: 10, RSS: 2}}, 2, 20, 10, 30, 2},
	}
	for i, c := range cases {
		s := summarize(c.rs)
		if s.n != c.n || s.median != c.median || s.lo != c.lo || s.hi != c.hi || s.rss != c.rss {
			t.Errorf("case %d: %+v, want n %d median %v range %v–%v rss %d", i, s, c.n, c.median, c.lo, c.hi, c.rss)
		}
	}
}

// TestTorchThreadsFollowHone: by default PyTorch gets as many threads as
// Hone's kernel workers (GOMAXPROCS in the worker's environment), not a
// fixed 2 that matched Hone only on a 2-core machine; a flag value stands.
func TestTorchThreadsFollowHone(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(5))
	if got := torchThreads(0); got != 5 {
		t.Errorf("default torch threads at GOMAXPROCS 5: %d, want 5", got)
	}
	if got := torchThreads(3); got != 3 {
		t.Errorf("--torch-threads 3 gave %d", got)
	}
	fs := pflag.NewFlagSet("modelbench", pflag.ContinueOnError)
	var o Options
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil || torchThreads(o.TorchThreads) != 5 {
		t.Errorf("flag default %d (%v): want it to follow GOMAXPROCS", o.TorchThreads, err)
	}
}
