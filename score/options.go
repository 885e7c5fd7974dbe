package score

import (
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/shard"
	"github.com/hone-rl/hone/internal/flagval"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/score/judge"
)

// Options configures a hone-score run. The flag fields are set by
// AddFlags; the fields after them are set by the caller (cmd/hone-score or
// a test).
type Options struct {
	Scorers      []string // --scorer, in chain order
	OnlyMissing  bool
	OnJudgeError string

	JudgeModel       string
	JudgeBaseURL     string // "" means api.openai.com; hone-score fills it from $OPENAI_BASE_URL
	JudgeAPIKey      string // hone-score fills it from $OPENAI_API_KEY; never logged
	RubricFile       string
	JudgeRetries     int
	JudgeTimeout     time.Duration
	JudgeTemperature float64 // NaN (the flag's default): the server's; negative is a usage error
	JudgeMaxTokens   int64
	JudgeFormat      string // judge.FormatJSONSchema, FormatJSONObject or FormatNone
	// JudgeExplanationMax bounds each explanation in the json_schema
	// (maxLength, characters); 0 leaves the keyword out because OpenAI's
	// strict mode does not accept it. See judge.SchemaOptions.
	JudgeExplanationMax int
	Concurrency         int
	CacheDir            string
	NoCache             bool
	PricePrompt         float64 // USD per million prompt tokens, for the summary
	PriceCompletion     float64 // USD per million completion tokens

	// JudgeContextTokens is the judge's context window; 0 sets no limit.
	// The prompt gets what is left after the answer's reserve
	// (JudgeMaxTokens, or DefaultAnswerReserve) and TemplateMargin.
	JudgeContextTokens int
	// JudgeTokenizer is a tokenizer.json, or a folder holding one, that
	// counts the prompt's tokens; "" estimates them (ruler.Estimate).
	JudgeTokenizer string

	// Shard is the part of the input groups this run scores (the groups
	// at places k with k mod Count == Index, hone-score --shard); the
	// zero value scores them all. Every shard reads the whole input.
	Shard shard.Shard
	// Inputs are the input files, resolved from the arguments by
	// fileset.Resolve; the caller closes the set.
	Inputs *fileset.Set
	// Out receives the scored Parquet file. The caller makes it atomic.
	Out io.Writer
	// Summary, if set, is called once as Run returns, whatever the error,
	// with the counts (Summary.String is the one-line summary).
	Summary func(Summary)
	Log     *slog.Logger // nil: discard
	// Progress, if set, is called after each group is written.
	Progress func(groups, rows int64)
	// Judge, if set, replaces the OpenAI-compatible judge (it is still
	// wrapped in the retry and cache decorators). For tests.
	Judge judge.Judge
	// Backoff between judge retries; nil means exponential from 1s.
	Backoff func(int) time.Duration
}

// DefaultCacheDir is the judge cache used when --judge-cache is not given:
// hone/judge under the user's cache directory, or .hone-judge-cache when
// there is none.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "hone", "judge")
	}
	return ".hone-judge-cache"
}

// DefaultAnswerReserve is the room left for the judge's answer under
// --judge-context-tokens when --judge-max-tokens is not given.
const DefaultAnswerReserve = 1024

// TemplateMargin is the room left under --judge-context-tokens for the
// tokens the judge's chat template wraps the two messages in.
const TemplateMargin = 64

func (o *Options) answerReserve() int {
	if o.JudgeMaxTokens > 0 {
		return int(min(o.JudgeMaxTokens, int64(o.JudgeContextTokens)))
	}
	return DefaultAnswerReserve
}

// promptBudget is the tokens the ruler prompt may take (system and user
// messages); 0 when there is no limit.
func (o *Options) promptBudget() int {
	if o.JudgeContextTokens <= 0 {
		return 0
	}
	return o.JudgeContextTokens - o.answerReserve() - TemplateMargin
}

// AddFlags registers the options' flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	// StringArray, not StringSlice: formulas contain commas (max(a, b)).
	fs.StringArrayVar(&o.Scorers, "scorer", nil, "scorer to apply, repeatable, in order: env | formula:EXPR | ruler, optionally NAME=... (default env)")
	fs.BoolVar(&o.OnlyMissing, "only-missing", false, "pass through untouched every group whose rows all have a reward and all of the chain's components (even when another chain scored them: one warning counts those)")
	fs.StringVar(&o.OnJudgeError, "on-judge-error", PolicyFail, "when the judge fails for a group after retries, or its prompt cannot fit --judge-context-tokens: fail (stop: exit 1, no output file), skip (drop the group, counted), or mark (write the group as it was read, unscored, with the reason in each judged row's error, counted); with skip or mark, a judge that fails every group still ends the run with exit 1, and a judge answering 401, 403 or 404 (refused key, unknown model), or an answer that is no chat completion (a page, or JSON of another shape: a --judge-base-url that is no OpenAI API), before it answered any call stops it at once (after one, such an answer is the group's failure)")
	fs.StringVar(&o.JudgeModel, "judge-model", "", "judge model name for ruler (required with --scorer ruler)")
	fs.StringVar(&o.JudgeBaseURL, "judge-base-url", "", "OpenAI-compatible base URL of the judge, e.g. http://localhost:8000/v1 (default $OPENAI_BASE_URL, else api.openai.com)")
	fs.StringVar(&o.JudgeAPIKey, "judge-api-key", "", "API key of the judge (default $OPENAI_API_KEY; prefer the variable: flags show in process lists)")
	fs.StringVar(&o.RubricFile, "rubric", "", "file with the grading rubric for ruler (default: Hone's built-in rubric)")
	fs.IntVar(&o.JudgeRetries, "judge-retries", 2, "retries of a judge call after a malformed answer, HTTP 429/5xx (not hone-serve's 500s logits_not_finite and constraint_no_token, which the same request cannot get past) or a timeout")
	fs.DurationVar(&o.JudgeTimeout, "judge-timeout", 5*time.Minute, "time limit of one judge call")
	flagval.OptionalFloat(fs, &o.JudgeTemperature, "judge-temperature", math.NaN(), "sampling temperature of the judge (default: the server's)")
	fs.Int64Var(&o.JudgeMaxTokens, "judge-max-tokens", 0, "maximum tokens of a judge answer, a reasoning judge's thinking included (0: the server's default)")
	fs.StringVar(&o.JudgeFormat, "judge-response-format", "json_schema", "response_format asked of the judge: json_schema, json_object, or none for servers without structured output (answers are validated either way)")
	fs.IntVar(&o.JudgeExplanationMax, "judge-explanation-max-chars", 0, "maxLength of each explanation in the json_schema, for judges that decode under the schema (hone-serve, vLLM; 300 is plenty): answers then end within a known token count; 0 leaves it out, as OpenAI's strict mode requires")
	fs.IntVar(&o.JudgeContextTokens, "judge-context-tokens", 0, "the judge's context window in tokens: longer ruler prompts are cut to fit (tool results first, each cut marked), leaving room for --judge-max-tokens (or 1024) and the chat template; 0: no limit")
	fs.StringVar(&o.JudgeTokenizer, "judge-tokenizer", "", "tokenizer.json of the judge model (or its folder) to count prompt tokens with for --judge-context-tokens (default: estimate 3 bytes a token)")
	fs.IntVar(&o.Concurrency, "concurrency", 4, "judge calls in flight at once")
	fs.StringVar(&o.CacheDir, "judge-cache", DefaultCacheDir(), "directory of cached judge verdicts")
	fs.BoolVar(&o.NoCache, "no-judge-cache", false, "neither read nor write the judge cache")
	fs.Float64Var(&o.PricePrompt, "judge-price-prompt", 0, "USD per million prompt tokens, to show the cost in the summary")
	fs.Float64Var(&o.PriceCompletion, "judge-price-completion", 0, "USD per million completion tokens, to show the cost in the summary")
}

// validate checks the flag values, fills defaults, and checks that
// there are inputs and an output.
func (o *Options) validate() error {
	if err := o.CheckFlags(); err != nil {
		return err
	}
	if o.Inputs.Len() == 0 {
		return stageerr.Usagef("no input files")
	}
	if o.Out == nil {
		return stageerr.Usagef("no output")
	}
	return nil
}

// CheckFlags checks the flag values and fills defaults, as Run does
// first: a command calls it before it says anything of a run that its
// usage may refuse (hone-score's warning of judge flags that a chain
// without a ruler drops came before the usage error it was a part of).
func (o *Options) CheckFlags() error {
	if len(o.Scorers) == 0 {
		o.Scorers = []string{"env"}
	}
	switch o.OnJudgeError {
	case PolicyFail, PolicySkip, PolicyMark:
	default:
		return stageerr.Usagef("--on-judge-error %q: want fail, skip or mark", o.OnJudgeError)
	}
	switch o.JudgeFormat {
	case "", judge.FormatJSONSchema, judge.FormatJSONObject, judge.FormatNone:
	default:
		return stageerr.Usagef("--judge-response-format %q: want json_schema, json_object or none", o.JudgeFormat)
	}
	if o.JudgeExplanationMax < 0 {
		return stageerr.Usagef("--judge-explanation-max-chars %d: want 0 or more", o.JudgeExplanationMax)
	}
	if o.JudgeContextTokens < 0 {
		return stageerr.Usagef("--judge-context-tokens %d: want 0 (no limit) or more", o.JudgeContextTokens)
	}
	if o.JudgeTokenizer != "" && o.JudgeContextTokens == 0 {
		return stageerr.Usagef("--judge-tokenizer counts tokens for --judge-context-tokens: give that too")
	}
	if o.JudgeContextTokens > 0 && o.promptBudget() < 1 {
		return stageerr.Usagef("--judge-context-tokens %d leaves no room for the prompt after the answer's %d tokens (--judge-max-tokens) and the chat template's %d",
			o.JudgeContextTokens, o.answerReserve(), TemplateMargin)
	}
	if o.JudgeTemperature < 0 {
		return stageerr.Usagef("--judge-temperature %v: want 0 or more", o.JudgeTemperature)
	}
	if o.JudgeMaxTokens < 0 {
		return stageerr.Usagef("--judge-max-tokens %d: want 0 (the server's default) or more", o.JudgeMaxTokens)
	}
	if o.JudgeRetries < 0 {
		return stageerr.Usagef("--judge-retries %d: want 0 or more", o.JudgeRetries)
	}
	if o.Concurrency < 1 {
		return stageerr.Usagef("--concurrency %d: want 1 or more", o.Concurrency)
	}
	if o.JudgeTimeout < 0 {
		return stageerr.Usagef("--judge-timeout %v: want 0 (none) or more", o.JudgeTimeout)
	}
	if o.PricePrompt < 0 || o.PriceCompletion < 0 {
		return stageerr.Usagef("judge prices must not be negative")
	}
	return nil
}
