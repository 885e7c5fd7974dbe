// Package trajectory owns Hone's trajectory schema and its file formats.
//
// A trajectory is one agent episode: the chat messages exchanged (with the
// policy's sampled token ids and logprobs where the server gave them), the
// tools offered, additional histories (a sub-agent's conversation, or the
// turns a summary replaced: each its own messages and tools, trained as a
// sequence of its own), the reward and its named components, metrics,
// metadata, free-text logs and timestamps. Trajectories come in groups, the
// attempts at one scenario that GRPO compares with each other; a group has
// metadata and metrics of its own.
//
// On disk a trajectory file is zstd-compressed Parquet, one row per
// trajectory, with the schema version in the key-value metadata under
// "hone.schema_version" (2 since additional_histories, logs,
// group_metadata and group_metrics were added; the group's fields are
// repeated on each of its rows and must agree). The Writer takes whole groups and ends a row group
// only between groups, so a group never straddles row groups; the Reader
// holds one row group in memory at a time and checks what it reads (columns
// present with the right types, unique trajectory ids, no group split across
// files, a schema version this build understands), naming the file, row,
// group and field in its errors. Columns it does not know are ignored, so
// newer writers can add columns without breaking older readers; columns
// added after the first release (messages' reasoning_content, the version 2
// columns) are optional, so version 1 files still read, with those fields
// empty. Schema returns the layout this build writes.
//
// Trajectory metadata keys beginning "hone." are reserved for Hone's
// stages. MetadataKeyChatTemplateKwargs ("hone.chat_template_kwargs")
// holds the chat template kwargs the episode was served with (Qwen3's
// {"enable_thinking":false}), as canonical JSON
// (CanonicalChatTemplateKwargs): hone-collect --chat-template-kwargs and
// the recording proxy write it, and hone-train lays the row out under it,
// refusing a run whose rows or flag disagree with it.
//
// Every error that blames the input (a bad file, row, group or JSONL line, a
// missing input) is an *InputError naming the file, row, group and field,
// and matches ErrBadInput; other errors come from the operating system or
// the context, so callers can tell bad input from a failed run.
//
// Writing: NewWriter(w, opts), WriteGroup for each group, Close; or
// WriteFile, which writes through fileset.Create (a temporary name, renamed
// when whole). Reading: Open(ctx, set) over an input set that
// fileset.Resolve made from the arguments (files, globs, directories, "-"),
// then Next until io.EOF; ReadAll and Validate wrap that loop, ReadFile
// reads one named file. NewReader reads one file from an io.ReaderAt.
//
// ImportJSONL and ExportJSONL move trajectories to and from JSON Lines in
// the OpenAI chat shape ({"messages": [...], "tools": [...]} per line, plus
// Hone's fields when present: "additional_histories" as a list of
// {"messages", "tools"}, "logs", and the group's "group_metadata" and
// "group_metrics" on each of its lines), so logs from other tools can enter and Hone's
// files can leave; lines without ids get deterministic ones (see
// ImportJSONL), and a metric given as null (Python's None: does not apply)
// is left out of its row, as hone-collect leaves it out, and listed in
// ImportResult.NullMetrics. ComputeStats (or a StatsBuilder fed group by group)
// summarizes an input set per step number, per adapter and step that served
// it, and per environment for hone-inspect.
//
// The package imports nothing of Hone's but format/fileset, format/chatmsg
// and format/runfolder (the served names "<run>@<N>").
package trajectory
