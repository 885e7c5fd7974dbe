package trainer

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
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
			n, InputList(names), FirstRows(h.Rows))))
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

// GroupSplits watches one group's rows for a mix of held-out rows and
// rows to train (Add each row, then Mixed). A group is one scenario's
// attempts and a scenario is in one split, so such a group is bad data:
// training its other rows trains on the scenario that judges the step
// (the val/test leak the split exists to prevent), and their advantages
// would come from part of the group.
type GroupSplits struct {
	held, kept           string // the first row of each kind, as Add named it
	heldSplit, keptSplit string
}

// Add takes one row of the group: where names it ("FILE row N (trajectory
// T)"), split is its split.
func (g *GroupSplits) Add(where, split string) {
	switch {
	case IsHeldOut(split) && g.held == "":
		g.held, g.heldSplit = where, split
	case !IsHeldOut(split) && g.kept == "":
		g.kept, g.keptSplit = where, split
	}
}

// Mixed names the group (id) when it has rows of both kinds, as "group G
// has ROW in split val and ROW in split train"; "" when it has not.
func (g *GroupSplits) Mixed(id string) string {
	if g.held == "" || g.kept == "" {
		return ""
	}
	kept := "split " + g.keptSplit
	if g.keptSplit == "" {
		kept = "no split"
	}
	return fmt.Sprintf("group %s has %s in split %s and %s in %s", id, g.held, g.heldSplit, g.kept, kept)
}

// MixedSplitsError refuses input sets with groups of both held-out rows
// and rows to train (each as GroupSplits.Mixed names it); nil for none.
func MixedSplitsError(groups []string) error {
	if len(groups) == 0 {
		return nil
	}
	return stageerr.BadInputf("%d groups mix rows of split val or test (held-out data) with rows to train: %s; a group is one scenario's attempts, and a scenario is in one split: give every row of a group the same split (or write the held-out rows as groups of their own)",
		len(groups), FirstRows(groups))
}

// InputList is a run's input names as its messages show them, joined: an
// object-store URL without the query that opens its bucket
// (endpoint=…&use_path_style=…), which names no input and would print the
// store's address in every message (fileset.DisplayName).
func InputList(names []string) string {
	show := make([]string, len(names))
	for i, n := range names {
		show[i] = fileset.DisplayName(n)
	}
	return strings.Join(show, ", ")
}
