package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/procgroup"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Main runs fn under SignalContext and exits the process with ExitCode of
// its error. It calls os.Exit only after fn returned, so fn's deferred
// clean-up (removing temporary files, closing outputs) has run. name
// prefixes the error message printed to stderr.
//
//	func main() { cli.Main("hone-inspect", run) }
func Main(name string, fn func(ctx context.Context) error) {
	code := Run(context.Background(), name, os.Stderr, fn)
	os.Exit(code)
}

// Run is Main without the exit: it runs fn under SignalContext, prints a
// non-nil error as "name: error" to stderr and returns the exit code.
// Once a signal arrived the code is 130 whatever error fn returned, since
// errors caused by the cancellation need not wrap context.Canceled.
func Run(parent context.Context, name string, stderr io.Writer, fn func(ctx context.Context) error) int {
	ctx, stop := SignalContext(parent, stderr)
	defer stop()
	err := profiled(os.Getenv(CPUProfileEnv), fn)(ctx)
	if err != nil && errors.Is(context.Cause(ctx), stageerr.ErrInterrupted) && !errors.Is(err, stageerr.ErrInterrupted) {
		err = fmt.Errorf("%w: %w", stageerr.ErrInterrupted, err)
	}
	code := ExitCode(err)
	switch {
	case code == ExitOK:
	case code == ExitInterrupted && errors.Is(err, fileset.ErrUnsent):
		// The output was kept in a local file: the user must learn where.
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
	case code == ExitInterrupted && errors.Is(err, stageerr.ErrInterrupted):
		fmt.Fprintf(stderr, "%s: interrupted\n", name)
	case code == ExitUsage && isUsageOnly(err):
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, helpCommand(err, name))
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
	}
	return code
}

// CPUProfileEnv names the environment variable that makes every Hone
// command write a CPU profile (go tool pprof format) of its run to the file
// it names: the way to see where a stage spends its time inside a pipeline,
// without a flag on each command.
const CPUProfileEnv = "HONE_CPUPROFILE"

// profiled wraps fn so that it runs under the CPU profiler writing to path;
// an empty path returns fn unchanged. A profile that cannot be written is an
// error of the run, since the user asked for it.
func profiled(path string, fn func(ctx context.Context) error) func(ctx context.Context) error {
	if path == "" {
		return fn
	}
	return func(ctx context.Context) error {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("%s: %w", CPUProfileEnv, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", CPUProfileEnv, err)
		}
		runErr := fn(ctx)
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("%s: %w", CPUProfileEnv, err)
		}
		return runErr
	}
}

// SignalContext returns a context that is cancelled, with cause
// stageerr.ErrInterrupted, on the first SIGINT or SIGTERM. A second signal
// exits the process at once with code 130, for the user whose clean-up hangs;
// temporary files may then remain (they are named ".*.tmp-*"), but the
// programs started in process groups of their own under the context
// (procgroup.SetFrom: environment programs, MCP servers) are killed first,
// since no Ctrl-C reaches their groups and they would run on, orphaned.
// notice, if not nil, receives one line per signal. stop releases the
// signal handler and cancels the context.
func SignalContext(parent context.Context, notice io.Writer) (ctx context.Context, stop func()) {
	return procgroup.SignalContext(parent, notice, stageerr.ErrInterrupted, ExitInterrupted)
}
