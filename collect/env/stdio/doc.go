// Package stdio runs an environment written in any language as a
// subprocess that speaks JSON lines: hone-collect writes one request object
// per line to the program's stdin and reads one response object per line
// from its stdout (stderr is kept for error messages). Each episode gets a
// fresh process; closing its stdin asks it to exit. On Unix each starts in
// a process group of its own, and one that lingers is killed with the
// whole group, so that a program behind a wrapper (sh -c, npx) is stopped
// with it.
//
// Requests and their responses (messages and tools in the OpenAI chat
// shape of format/chatmsg, an assistant message with the reasoning_content
// the model gave; any response may instead be {"error": "text"}, which
// fails the episode):
//
//	{"op":"hello"}
//	  → {"name":"arith", "reward_range":[0,1], "policies":["calculator"]}
//	{"op":"scenarios", "seed":1, "n":8, "split":"val"}   (split: only under --split)
//	  → {"scenarios":[{"id":"...", "payload":{...}, "split":"train"}, ...]}
//	{"op":"reset", "scenario":{"id":..., "payload":..., "split":...}, "seed":42}
//	  → {"messages":[{"role":"user","content":"..."}], "tools":[{"type":"function","function":{...}}]}
//	{"op":"step", "message":{assistant message}, "calls":["call_1"]}
//	  → {"messages":[{"role":"tool","tool_call_id":"call_1","content":"..."}],
//	     "done":false, "reward":0, "metrics":{"correct":0}}
//	{"op":"act", "policy":"calculator", "seed":7, "messages":[...], "tools":[...]}
//	  → {"message":{assistant message}}
//
// Every request also carries "id", its number in the process (1, 2, …);
// a response whose "id" is a number is checked against it (one of
// another type is the program's own). A line no request waits
// for fails the next request ("responses out of step"), and a response
// must be a JSON object.
//
// "calls" lists the ids of the tool calls hone-collect found well formed;
// it answers the malformed ones itself, so the environment must skip them.
// The reward and metrics of the last step response are the episode's.
// "hello" is sent to the first process only (at New), for the name, reward
// range and policies; the processes of episodes and policies start with
// "reset" or "act". "scenarios" is needed only when scenarios are
// generated, "act" only for --policy scripted.
// pipelines/stdio-env-example/env.py is a complete example in Python.
package stdio
