package trainer

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// ErrAllHeldOut is matched by the error of an input set whose every
// trajectory is in a held-out split (HeldOut.Report): a --watch-dir call
// takes it as nothing to train rather than as a bad file.
var ErrAllHeldOut = errors.New("every trajectory is held out")

// IsHeldOut says whether a trajectory of this split is evaluation data,
// which training leaves out: val (what hone-inspect log-eval and
// --best-metric choose steps by) and test (final numbers). A step trained
// on them would be judged on its own training data. Train and unlabelled
// rows ("", a proxy's or an imported file's) are trained.
func IsHeldOut(split string) bool {
	return split == trajectory.SplitVal || split == trajectory.SplitTest
}

// HeldOut counts the trajectories of an input set that training reads
// (Read) and names those it leaves out for their split (Rows, each
// "FILE row N (group G, trajectory T)"), for one warning (Report).
type HeldOut struct {
	Read int
	Rows []string
}

// Report warns once, naming how many and the first rows, when some
// trajectories of the inputs (names) were left out for their split, and
// returns an error matching ErrAllHeldOut and stageerr.ErrBadInput when
// every one was: there is then nothing to train, and training on them
// anyway is what the split exists to prevent.
func (h *HeldOut) Report(log *slog.Logger, names []string) error {
	n := len(h.Rows)
	if n == 0 {
		return nil
	}
	if n == h.Read {
		return stageerr.BadInput(allHeldOutError(fmt.Sprintf("nothing to train: all %d trajectories of %s are in split val or test (held-out data, for hone-inspect log-eval; never trained), e.g. %s; train on rows of split train or none (hone-collect labels generated scenarios train, or as --split says)",
			n, strings.Join(names, ", "), FirstRows(h.Rows))))
	}
	if log != nil {
		log.Warn(fmt.Sprintf("%d of %d trajectories are in split val or test and are left out of training (held-out data): %s",
			n, h.Read, FirstRows(h.Rows)))
	}
	return nil
}

// allHeldOutError is Report's error: its text says what is wrong, and it
// matches ErrAllHeldOut without repeating that sentinel's words.
type allHeldOutError string

func (e allHeldOutError) Error() string { return string(e) }

func (e allHeldOutError) Is(target error) bool { return target == ErrAllHeldOut }
