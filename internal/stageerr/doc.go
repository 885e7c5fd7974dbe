// Package stageerr is the one definition of the kinds of error a Hone
// stage returns and every hone-* binary maps to its exit code (DESIGN.md
// "Conventions for every stage binary"):
//
//   - ErrUsage: bad flags, arguments or option values (exit code 2, and the
//     binary points to its --help);
//   - ErrBadInput: bad input data, a file that is missing, is not what it
//     should be or fails validation (exit code 2);
//   - ErrInterrupted: the run stopped before it was done because its
//     context ended, Ctrl-C or SIGTERM (exit code 130);
//   - anything else: a failure during the run (exit code 1).
//
// Stages mark their errors with Usage, BadInput and Input, or wrap
// ErrInterrupted; cmd/internal/cli.ExitCode is the one mapping to exit
// codes, and cli's SignalContext ends a run's context with ErrInterrupted
// as its cause.
//
// Why here and not in cmd/internal/cli: the stage libraries (collect,
// score, train, serve) must say which kind an error is, and Go's internal
// rule lets only packages under cmd/ import cmd/internal/cli; the import
// policy (policy_test.go) forbids it too, since stages never depend on the
// binaries. So the kinds are defined once below the module's internal/,
// which every stage and cmd may import, and cli maps them; cli's Usage,
// BadInput and their f forms only forward here. The package imports
// nothing of ours, so that every folder may use it.
package stageerr
