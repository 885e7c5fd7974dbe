package trainer

import (
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// RowKwargs lays out the rows of one step's input each under the chat
// template kwargs it was served with. A row that records them
// (trajectory.MetadataKeyChatTemplateKwargs: hone-collect
// --chat-template-kwargs, the recording proxy) is laid out under those; a
// row that does not, under --chat-template-kwargs as before. Training a
// row under other kwargs than its own trains its tokens under a prompt the
// model never saw, so a flag that differs from a row's record, or two rows
// that record different kwargs, are usage errors naming the rows and both
// values. A RowKwargs holds the first recording row it saw: use a new one
// for each step's input. A nil *RowKwargs leaves lopt as it is.
type RowKwargs struct {
	// Flag is --chat-template-kwargs as given ("": not given); lopt.Kwargs
	// is its parsed value.
	Flag string

	flagText            string // Flag's canonical JSON, once parsed
	flagParsed          bool
	firstRow, firstText string // the first row that recorded kwargs, and its record
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
	}
	return lopt, nil
}

// resolve is the kwargs t records, and whether it records any, checked
// against the flag and against the first row of the input that recorded
// some.
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
		return nil, false, stageerr.Usagef("%s was served with chat template kwargs %s (metadata %s), but --chat-template-kwargs is %s: the row would be trained under another prompt than the model saw (leave the flag out to use the recorded kwargs)",
			row, orNone(text), trajectory.MetadataKeyChatTemplateKwargs, orNone(k.flagText))
	}
	if k.firstRow == "" {
		k.firstRow, k.firstText = row, text
		return kw, true, nil
	}
	if text != k.firstText {
		return nil, false, stageerr.Usagef("%s was served with chat template kwargs %s, but %s with %s (metadata %s): one step's input is laid out under one set of kwargs, so train rows served with different ones apart",
			k.firstRow, orNone(k.firstText), row, orNone(text), trajectory.MetadataKeyChatTemplateKwargs)
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
