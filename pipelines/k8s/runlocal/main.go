// Command runlocal runs the steps of pipelines/k8s/round.yaml on this
// machine, with the hone binaries on PATH (or in --bin), against the
// object store the parameters name and a hone-serve on this machine (the
// default serve-url names the cluster's Service):
//
//	go run ./pipelines/k8s/runlocal --bin bin -p store=s3://hone \
//	    -p query='?endpoint=http://127.0.0.1:9000&use_path_style=true&disable_https=true&region=us-east-1' \
//	    -p serve-url=http://127.0.0.1:8000 -p base-model=tiny -p model-dir=models/tiny -p round=1 \
//	    -p train-device=cpu
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hone-rl/hone/internal/procgroup"
	"github.com/hone-rl/hone/pipelines/k8s"
)

type params map[string]string

func (p params) String() string { return fmt.Sprint(map[string]string(p)) }
func (p params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	p[k] = v
	return nil
}

func main() {
	file := flag.String("f", "pipelines/k8s/round.yaml", "the WorkflowTemplate")
	bin := flag.String("bin", "", "folder of the hone binaries, put first on PATH (default: PATH as it is)")
	ps := params{}
	flag.Var(ps, "p", "parameter NAME=VALUE (repeatable)")
	flag.Parse()
	// The first Ctrl-C (or SIGTERM) stops the steps as Kubernetes stops a
	// pod; a second kills their process groups and exits at once.
	ctx, stop := procgroup.SignalContext(context.Background(), os.Stderr, context.Canceled, exitInterrupted)
	defer stop()
	if err := run(ctx, *file, *bin, ps); err != nil {
		fmt.Fprintln(os.Stderr, "runlocal:", err)
		os.Exit(exitCode(ctx, err))
	}
}

// exitCode is runlocal's exit code after err, as the hone commands'
// (cmd/internal/cli): 130 once interrupted; 2 for a template or parameter
// refused before any step ran; else the failed step's own (2 for a hone
// command's usage error or bad input, 1 for a failure), so that a script
// running rounds, or a retry around it, tells a mistake from a failure.
// A step killed by a signal, or not started, is 1.
func exitCode(ctx context.Context, err error) int {
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case errors.Is(err, k8s.ErrRefused):
		return 2
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	}
	return 1
}

// exitInterrupted is the exit code of a second Ctrl-C: 128 + SIGINT, as
// the hone commands exit.
const exitInterrupted = 130

func run(ctx context.Context, file, bin string, ps params) error {
	r, err := k8s.Load(file)
	if err != nil {
		return err
	}
	env := os.Environ()
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return err
		}
		env = append(env, "PATH="+abs+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return r.Run(ctx, k8s.Options{Params: ps, Env: env, Log: os.Stdout})
}
