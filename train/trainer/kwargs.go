package trainer

import (
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
