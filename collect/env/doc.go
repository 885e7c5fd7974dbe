// Package env owns the contract between hone-collect's agent loop and an
// environment: Env makes scenarios and episodes, an Episode answers each
// assistant turn with the messages to append, and says its reward and
// metrics. It also holds the OpenAI wire shape of messages and tools that
// external environments (stdio, MCP) and the model client share, and the
// small JSON-schema check the loop uses to reject malformed tool calls.
//
// Environments live in subpackages (guess, tictactoe, game2048, inbox,
// stdio, mcpenv); envtest holds an in-memory fake and the suite every
// environment passes.
package env
