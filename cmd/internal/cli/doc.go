// Package cli holds the conventions every Hone stage binary shares, written
// once so that each cmd/hone-* main stays flags and wiring:
//
//   - inputs: paths, globs, directories of Parquet files, or "-" for stdin,
//     resolved once by format/fileset's rule (ResolveInputs adds the exit
//     codes);
//   - output: -o PATH or stdout when stdout is not a terminal, never Parquet
//     to a terminal (ChooseOutput, OpenOutput), written through
//     fileset.Create to a temporary name in the target directory and renamed
//     on success, so a reader never sees half a file;
//   - a signal-aware context: the first SIGINT/SIGTERM cancels, a second one
//     exits at once (SignalContext);
//   - structured logs on stderr (LogOptions);
//   - progress on stderr when it is a terminal — percent, rates, ETA, and a
//     "waiting" heartbeat once nothing finished for a second — and a
//     one-line summary (Progress); the log writes through Progress.Writer,
//     so that its lines scroll above the progress line, never over it;
//   - one mapping from errors to exit codes: 0 ok, 1 failure, 2 usage or bad
//     input, 130 interrupted (ExitCode, over the kinds of error that the
//     stages and the mains share, defined once in internal/stageerr; Usage
//     and BadInput forward there), and Main, which exits only after the run
//     function returned and its deferred clean-up ran;
//   - --help on stdout with exit 0 (NewFlagSet, ParseFlags, cobra's help),
//     and usage errors on stderr with exit 2, each pointing to the --help
//     of the subcommand it came from (ForCommand, ExecuteCommand).
package cli
