package trainer

import (
	"errors"
	"fmt"
)

// Errors that blame what the user handed a training run (the model folder,
// --init-adapter, the trajectory and chat files) are of kind
// stageerr.ErrBadInput (internal/stageerr.Input marks them): exit code 2.

// ErrNotFinite is matched by the error that stops a run whose loss,
// gradient or updated weights hold NaN or Inf. Nothing of that step is
// saved; the adapter and optimizer in memory are then unusable.
var ErrNotFinite = errors.New("not finite")

// notFinite says which quantity of a step went non-finite.
type notFinite struct {
	what   string // "loss", "gradient", "updated weights"
	detail string
}

func (e *notFinite) Error() string {
	verb := "is"
	if e.what == "updated weights" {
		verb = "are"
	}
	return fmt.Sprintf("the %s %s not finite (%s)", e.what, verb, e.detail)
}

func (e *notFinite) Is(target error) bool { return target == ErrNotFinite }
