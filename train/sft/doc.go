// Package sft is hone-train's supervised fine-tuning job on the same LoRA
// adapters GRPO trains: the input is trajectory files (Parquet) or JSON
// Lines chat data ({"messages": [...], "tools": [...]} per line, read by
// format/trajectory's ImportJSONL), and only assistant turns are trained —
// all of them, or the last of each conversation (--turns); a conversation
// with none is left out, with one warning naming the rows. A trajectory
// that marks some assistant turns trainable (hone-collect and hone-proxy
// mark the policy's turns, not those the agent wrote) trains the marked
// ones alone; one that marks none trains every assistant turn. A chat
// line that says "trainable": false on an assistant turn and true on
// none marks its other assistant turns (format/trajectory's import), so
// the excluded turn is context; an OpenAI fine-tuning file's "weight": 0
// or 1 on a message reads as "trainable": false or true. Tokens come from
// format/layout with the model's own chat template (sampled ids are used
// where a trajectory carries them).
//
// Loss: the token mean of the negative log-likelihood over the step's
// trainable tokens, −(1/T) Σ_t log π(x_t | x_<t), accumulated over
// micro-batches by token budget. Steps, data order, checkpoints, resume and
// metrics are train/trainer's, so an SFT run folder can seed a GRPO run
// (hone-train grpo --init-adapter OUT/RUN/step-N).
package sft
