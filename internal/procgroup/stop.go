package procgroup

import "errors"

// errNotStarted is Stop's answer for a command that never started: it has
// no process to wait for and no group to kill.
var errNotStarted = errors.New("procgroup: stop: the program was never started")
