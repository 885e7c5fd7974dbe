package cli

import "golang.org/x/term"

// IsTerminal reports whether w is a file descriptor attached to a terminal.
// Writers that are not files (buffers, pipes wrapped in other types) are not
// terminals.
func IsTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
