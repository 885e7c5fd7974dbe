package hone

import (
	"regexp"
	"testing"
)

// TestContractModelFolder pins the model folder to its one opener,
// format/modelfolder: which files a folder holds, how they are read, and
// which tokens end a turn (serve stops on them, layout ends a trained turn
// on them). A stage that reads a folder's files itself is how serve and
// layout came to disagree about Llama 3.2's <|end_of_text|> (issue #22).
func TestContractModelFolder(t *testing.T) {
	srcs := moduleSources(t)
	opener := []string{"format/modelfolder"}

	// The file names belong to the parsers that read them (and the opener
	// that names the folder's layout for writers such as init-model).
	names := []string{"format/modelfolder", "format/hfconfig", "format/chattemplate", "format/tokenizer"}
	pin(t, stringsOutside(srcs, regexp.MustCompile(`^(config|generation_config|tokenizer_config|tokenizer)\.json(\.gz)?$`), names),
		names, "spells a model folder's file name; use the constants of format/modelfolder")

	for _, c := range []struct{ pkg, fn string }{
		{"github.com/hone-rl/hone/format/hfconfig", "Load"},
		{"github.com/hone-rl/hone/format/hfconfig", "LoadEOS"},
		{"github.com/hone-rl/hone/format/chattemplate", "Load"},
		{"github.com/hone-rl/hone/format/tokenizer", "Load"},
		{"github.com/hone-rl/hone/format/safetensors", "Open"},
	} {
		pin(t, callsOutside(srcs, c.pkg, c.fn, opener), opener, "opens part of a model folder itself; open it with modelfolder.Open")
	}

	// Which tokens end a turn is what the folder says (modelfolder.StopTokens),
	// never a list of names: a hard-coded list is how layout missed Llama
	// 3.2's <|end_of_text|>. Only the generators of tiny model folders,
	// which write tokenizers, spell them.
	writer := []string{"train/tinymodel", "format/modelfolder/modelfoldertest"}
	pin(t, stringsOutside(srcs, regexp.MustCompile(`^<\|(im_end|endoftext|end_of_text|eot_id|eom_id)\|>$`), writer),
		writer, "names an end-of-turn token; take the stop ids from modelfolder.Folder.StopTokens")
}
