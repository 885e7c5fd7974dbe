package collect

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/hone-rl/hone/format/urlmask"
)

// failureAdvice says what to check when every episode failed. Episodes
// whose first model call was refused for the model's context (tally's
// promptFull) failed for their prompt, not for the endpoint: blamed on
// the endpoint, that advice sent users looking at a server that was up.
func failureAdvice(o Options, scripted bool, t *errorTally, failures int) string {
	return failureCause(o, scripted, t, failures) + "; each failed episode is a row with its error in the output (hone-inspect stats, hone-inspect head)"
}

// stopAdvice says what to check when more episodes failed than
// --max-failures allows, succeeded having ended well so far: with none,
// what failureAdvice says of the failures (an endpoint that served no
// episode is as suspect as when every episode failed); with some, only
// what the prompts refused for the context say, as the endpoint answered.
// The rows are not pointed to: a stop may end before any group finished.
// "" when there is nothing to add to the most common error.
func stopAdvice(o Options, scripted bool, t *errorTally, failures, succeeded int) string {
	switch {
	case succeeded == 0:
		return failureCause(o, scripted, t, failures)
	case t.promptFull > 0:
		return promptAdvice(fmt.Sprintf("%d of the episodes", t.promptFull), t.promptMsg)
	}
	return ""
}

// failureCause is failureAdvice less its pointer to the output's rows.
func failureCause(o Options, scripted bool, t *errorTally, failures int) string {
	if scripted {
		return "check the environment's settings (--env, --env-opt) and the scenarios"
	}
	if t.promptFull > 0 && t.promptFull == failures {
		return promptAdvice("every episode", t.promptMsg)
	}
	// No model call of any episode failed (an episode may have made
	// none, failing as it started), or only first calls refused for the
	// context, which the endpoint answered: the endpoint and the model
	// are not the cause.
	if t.envFail == failures {
		return "no model call failed; check the environment (its program or server, --env, --env-opt) and the scenarios"
	}
	if t.envFail > 0 && t.envFail+t.promptFull == failures {
		return fmt.Sprintf("no model call failed but for a prompt too long; check the environment (its program or server, --env, --env-opt) and the scenarios, where %d of the episodes failed; %s",
			t.envFail, promptAdvice(fmt.Sprintf("%d of the episodes", t.promptFull), t.promptMsg))
	}
	where := urlmask.Shown(o.Model.BaseURL)
	if where == "" {
		where = "api.openai.com (no --base-url or $OPENAI_BASE_URL given)"
	}
	advice := fmt.Sprintf("check that %s is up and serves model %q (--base-url, --model, --api-key), and the environment's settings (--env-opt)", where, o.Model.Model)
	if t.promptFull > 0 {
		advice += "; " + promptAdvice(fmt.Sprintf("%d of the episodes", t.promptFull), t.promptMsg)
	}
	return advice
}

// The sizes the servers' refusals of a prompt over the context give, in
// their words: OpenAI's and vLLM's OpenAI layer ("This model's maximum
// context length is N tokens. However, your messages resulted in P
// tokens", or "you requested T tokens (P in the messages, C in the
// completion)"), hone-serve's ("your request has [at least] P input
// tokens"), vLLM's engine ("The decoder prompt (length P) is longer than
// the maximum model length of N") and llama.cpp's ("request (P tokens)
// exceeds the available context size (N tokens)"). vLLM since 0.8 says a
// completion the context leaves no room for in words of its own ("'max_tokens'
// or 'max_completion_tokens' is too large: C. This model's maximum context
// length is N tokens and your request has P input tokens"), which name no
// "completion" after the size.
var (
	contextSizeRE = []*regexp.Regexp{
		regexp.MustCompile(`maximum context length is (\d+)`),
		regexp.MustCompile(`maximum model length of (\d+)`),
		regexp.MustCompile(`context size \((\d+) tokens\)`),
	}
	// "resulted in" first: OpenAI's words for a request with tools go on
	// "(M in the messages, F in the functions)", and M leaves the tool
	// schemas out.
	promptSizeRE = []*regexp.Regexp{
		regexp.MustCompile(`resulted in (\d+) tokens`),
		regexp.MustCompile(`(\d+) in the (?:messages|prompt)`),
		regexp.MustCompile(`request has ((?:at least )?\d+) input tokens`),
		regexp.MustCompile(`prompt \(length (\d+)\)`),
		regexp.MustCompile(`request \((\d+) tokens\)`),
	}
	completionSizeRE = []*regexp.Regexp{
		regexp.MustCompile(`(\d+) in the completion`),
		regexp.MustCompile(`max_completion_tokens' is too large: (\d+)`),
	}
)

// firstMatch is the first group of the first of res that matches msg ("":
// none does).
func firstMatch(msg string, res []*regexp.Regexp) string {
	for _, re := range res {
		if m := re.FindStringSubmatch(msg); m != nil {
			return m[1]
		}
	}
	return ""
}

// promptAdvice says that the first model call of who's episodes was
// refused for the model's context, with the sizes msg (one such
// episode's error) gives, and what to do: when the prompt fits and only
// --max-tokens' room for the completion does not, lower --max-tokens;
// else shorten the prompt or serve a longer context.
func promptAdvice(who, msg string) string {
	ctxLen := firstMatch(msg, contextSizeRE)
	prompt := firstMatch(msg, promptSizeRE)
	of := ""
	if ctxLen != "" {
		of = " of " + ctxLen + " tokens"
	}
	const longer = "serve the model with a longer context (vLLM's --max-model-len, llama.cpp's --ctx-size)"
	if completion := firstMatch(msg, completionSizeRE); completion != "" {
		p, perr := strconv.Atoi(prompt)
		n, nerr := strconv.Atoi(ctxLen)
		if perr == nil && nerr == nil && p < n {
			return fmt.Sprintf("the first model call of %s was refused for the model's context: its prompt (%d tokens) fits, but not with the completion --max-tokens %s asks room for, over the server's context%s: lower --max-tokens, or %s",
				who, p, completion, of, longer)
		}
	}
	size := ""
	if prompt != "" {
		size = ", " + prompt + " tokens"
	}
	return fmt.Sprintf("the first model call of %s was refused for the model's context: the prompt (the system and first user messages and the tool schemas%s) is longer than the server's context%s: shorten the prompt (the environment's settings or scenarios), %s, or offer the model fewer tools",
		who, size, of, longer)
}
