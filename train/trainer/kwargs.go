package trainer

import (
	"encoding/json"
	"slices"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// RowKwargs lays out each row of the input under the chat template kwargs
// it was served with. A row that records them
// (trajectory.MetadataKeyChatTemplateKwargs: hone-collect
// --chat-template-kwargs, the recording proxy) is laid out under those; a
// row that does not, under --chat-template-kwargs as before. Rows that
// record different kwargs train together, each under its own (mixed
// thinking and non-thinking Qwen3 rows, say): every row is laid out on
// its own, so nothing ties one row's prompt to another's. Training a row
// under other kwargs than its own trains its tokens under a prompt the
// model never saw, so a flag that differs from a row's record is a usage
// error naming the row and both values. It is checked before the row is
// laid out, so no too-long or zero-advantage report is made of a layout
// under the wrong kwargs. A nil *RowKwargs leaves lopt as it is.
type RowKwargs struct {
	// Flag is --chat-template-kwargs as given ("": not given); lopt.Kwargs
	// is its parsed value.
	Flag string

	flagText   string // Flag's canonical JSON, once parsed
	flagParsed bool
	// recorded and unrecorded count the rows laid out under their own
	// record and under the flag (MayChange).
	recorded, unrecorded int
}

// MayChange is mayChange with the config key of --chat-template-kwargs
// added when the flag laid out none of the rows read (each recorded its
// own, which a flag that differs is refused against, and at least one was
// read): on those rows a resume that adds the flag, drops it or gives
// another spelling trains what the run trained, so it is not refused as a
// changed option, and the run keeps its saved value (keepIdleKwargs).
// When the flag lays out any row it stays compared.
func (k *RowKwargs) MayChange(mayChange []string) []string {
	if k == nil || k.recorded == 0 || k.unrecorded > 0 {
		return mayChange
	}
	return append(slices.Clone(mayChange), kwargsKey)
}

// Options is lopt for trajectory t, named row in messages: with the
// kwargs t records when it records any.
func (k *RowKwargs) Options(row string, t *trajectory.Trajectory, lopt layout.Options) (layout.Options, error) {
	if k == nil {
		return lopt, nil
	}
	kw, recorded, err := k.resolve(row, t)
	if err != nil {
		return lopt, err
	}
	if recorded {
		lopt.Kwargs = kw
		k.recorded++
	} else {
		k.unrecorded++
	}
	return lopt, nil
}

// resolve is the kwargs t records, and whether it records any, checked
// against the flag.
func (k *RowKwargs) resolve(row string, t *trajectory.Trajectory) (kw map[string]any, recorded bool, err error) {
	rec, ok := t.Metadata[trajectory.MetadataKeyChatTemplateKwargs]
	if !ok {
		return nil, false, nil
	}
	kw, text, err := trajectory.CanonicalChatTemplateKwargs(rec)
	if err != nil {
		return nil, false, stageerr.BadInputf("%s: metadata %s: %w", row, trajectory.MetadataKeyChatTemplateKwargs, err)
	}
	if !k.flagParsed && k.Flag != "" {
		if _, k.flagText, err = trajectory.CanonicalChatTemplateKwargs(k.Flag); err != nil {
			return nil, false, stageerr.Usagef("--chat-template-kwargs %w", err)
		}
		k.flagParsed = true
	}
	if k.Flag != "" && text != k.flagText {
		return nil, false, stageerr.Usagef("%s was served with chat template kwargs %s (metadata %s), but --chat-template-kwargs is %s: the row would be trained under another prompt than the model saw (leave the flag out to use each row's recorded kwargs)",
			row, orNone(text), trajectory.MetadataKeyChatTemplateKwargs, orNone(k.flagText))
	}
	return kw, true, nil
}

// orNone names kwargs in a message, "none ({})" when there are none.
func orNone(text string) string {
	if text == "" {
		return "none ({})"
	}
	return text
}

// DeferKwargs adds the config key of --chat-template-kwargs to
// o.MayChange, for a job that learns which rows it trains only once Setup
// holds the run's lock (grpo --watch-dir: the manifest read under it
// names the new files or the unfinished session's), so that Setup cannot
// yet tell whether the flag lays out any of them. Setup then passes over
// the flag and gives o the run's saved value (keepIdleKwargs), and leaves
// a resume's new checkpoint options unapplied, since the call may yet be
// refused; the job reads its rows under the command's flag and compares
// it with the run's there (CheckDeferredKwargs), as RowKwargs.MayChange
// lets a job that reads its rows before Setup.
func DeferKwargs(o *Options) {
	o.MayChange = append(slices.Clone(o.MayChange), kwargsKey)
	o.deferKwargs = true
}

// CheckDeferredKwargs is the comparison DeferKwargs put off, once the rows
// were read under k: o.TemplateKwargs is the command's flag, and run the
// run's value that Setup gave o (prep resumed a step; a fresh run has
// nothing to compare). Where the flag laid out none of the rows
// (k.MayChange names the key: each recorded its own) or equals the
// run's, o takes the run's value, which the steps save; where no call of
// the run laid out a row under the run's (Options.KwargsIdle), o keeps
// the command's, which the rows read were laid out under; otherwise it
// is the usage error Setup gives for a changed option. A nil k, or one that
// read no row (nothing new), leaves the flag compared. The call not
// refused, the checkpoint options Setup left unapplied are applied.
func CheckDeferredKwargs(prep *Prepared, o *Options, run string, k *RowKwargs) error {
	if err := compareDeferredKwargs(prep, o, run, k); err != nil {
		return err
	}
	apply := prep.applyDeferred
	prep.applyDeferred = nil
	if apply == nil {
		return nil
	}
	return apply()
}

// compareDeferredKwargs is CheckDeferredKwargs's comparison.
func compareDeferredKwargs(prep *Prepared, o *Options, run string, k *RowKwargs) error {
	idle := slices.Contains(k.MayChange(nil), kwargsKey) // the flag laid out none of the rows
	if prep.Done == 0 {
		o.KwargsIdle = idle
		return nil
	}
	if flag := o.TemplateKwargs; idle || flag == run || sameJSONText(flag, run) {
		o.TemplateKwargs = run
		o.KwargsIdle = prep.kwargsIdle && idle
		return nil
	}
	if prep.kwargsIdle && k != nil {
		// No call of the run laid out a row under its value (KwargsIdle):
		// the command's, laying out rows now, becomes the run's.
		o.KwargsIdle = false
		return nil
	}
	// The same words as Setup's refusal: configs of this key alone, as
	// saved ("" is left out, as omitempty leaves it).
	config := func(v string) []byte {
		if v == "" {
			return []byte("{}")
		}
		b, _ := json.Marshal(map[string]string{kwargsKey: v})
		return b
	}
	return refuseChanges(prep.Ckpt, prep.Done, config(run), config(o.TemplateKwargs), nil)
}
