// Package procgroup starts a program in a process group of its own and
// stops the whole group: a program run behind a wrapper (sh -c, uv run,
// npx) is the wrapper's child, and stopping only the wrapper would leave a
// hung program running, orphaned, after its episode or run. The stdio
// environment (one program per episode), the MCP environment (one server
// per run) and the local runner of the cluster manifests (a step's sh -c)
// use it. Where there are no Unix process groups only the program itself
// is stopped. On Linux the program also gets SIGKILL when the command
// dies without its clean-up (killed with SIGKILL itself): the
// parent-death signal, which reaches the program but not what it started.
package procgroup
