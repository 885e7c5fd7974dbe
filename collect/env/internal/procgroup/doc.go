// Package procgroup starts an environment's program in a process group of
// its own and stops the whole group: a program run behind a wrapper (sh -c,
// uv run, npx) is the wrapper's child, and stopping only the wrapper would
// leave a hung program running, orphaned, after its episode or run. The
// stdio environment (one program per episode) and the MCP environment (one
// server per run) use it. Where there are no Unix process groups only the
// program itself is stopped.
package procgroup
