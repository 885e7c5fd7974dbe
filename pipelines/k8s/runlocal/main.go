// Command runlocal runs the steps of pipelines/k8s/round.yaml on this
// machine, with the hone binaries on PATH (or in --bin), against the
// object store the parameters name and a hone-serve on this machine (the
// default serve-url names the cluster's Service):
//
//	go run ./pipelines/k8s/runlocal --bin bin -p store=s3://hone \
//	    -p query='?endpoint=http://127.0.0.1:9000&use_path_style=true&disable_https=true&region=us-east-1' \
//	    -p serve-url=http://127.0.0.1:8000 -p policy-model=base -p model-dir=models/tiny -p round=1 \
//	    -p train-device=cpu
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

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
	ctx, stop := signalContext(context.Background())
	defer stop()
	if err := run(ctx, *file, *bin, ps); err != nil {
		fmt.Fprintln(os.Stderr, "runlocal:", err)
		os.Exit(1)
	}
}

// exitInterrupted is the exit code of a second Ctrl-C: 128 + SIGINT, as
// the hone commands exit.
const exitInterrupted = 130

// signalContext returns a context cancelled on the first SIGINT or
// SIGTERM, which stops the steps as Kubernetes stops a pod (SIGTERM, then
// SIGKILL after the grace period). A second signal exits at once, for the
// user whose steps do not stop; the steps run in process groups of their
// own, which the terminal's Ctrl-C does not reach, so the context's
// procgroup.Set kills them first, or they would run on, orphaned. stop
// releases the handler and cancels the context.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	steps := procgroup.NewSet()
	ctx, cancel := context.WithCancel(procgroup.WithSet(parent, steps))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "runlocal: received %v: stopping the steps (send it again to exit at once)\n", sig)
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "runlocal: received %v again: killing the steps and exiting\n", sig)
			if err := steps.KillAll(); err != nil {
				fmt.Fprintf(os.Stderr, "runlocal: killing the steps: %v\n", err)
			}
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel()
		})
	}
	return ctx, stop
}

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
