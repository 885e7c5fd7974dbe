// Package chattemplate renders a model's own Jinja chat template the way
// Hugging Face transformers does, so that the text Hone trains on is the
// text the model saw when it was served.
//
// It owns: finding the template in a model folder (tokenizer_config.json's
// chat_template, as a string or as a list of named templates, or a
// chat_template.jinja file beside it), the special tokens the template may
// reference (bos_token, eos_token, ...), turning OpenAI-style messages and
// tools into the template's variables with their key order preserved, and
// the helpers transformers adds to the Jinja environment: raise_exception,
// strftime_now (with an injectable clock) and a tojson that is Python's
// json.dumps(ensure_ascii=False) with the key order of the input.
//
// Templates are compiled with github.com/ardanlabs/jinja, which applies
// transformers' trim_blocks/lstrip_blocks settings. Values are passed to it
// as its insertion-ordered dict type: a plain Go map would reach the template
// with sorted keys, and tool schemas and tool-call arguments rendered through
// tojson would then differ from what the model was trained on.
//
// The reference for correctness is @huggingface/jinja (the renderer of
// transformers.js): testdata/templates/golden holds its renderings of the
// conversations in testdata/templates/cases for Qwen2.5, Qwen3, Llama 3.1
// and a ChatML template, and the tests demand byte equality.
package chattemplate
