// Package score owns hone-score: it fills in the rewards of trajectory
// files with a chain of scorers and writes the scored rows, in their input
// order, as one new trajectory file.
//
// A Scorer looks at a whole group and returns one named reward component
// per trajectory. Scorers are chained (--scorer, repeatable, applied in
// order): each writes its component, the trajectory's reward becomes that
// value, and later scorers see the components of earlier ones. Built in:
//
//	env                    the environment's reward, as collected
//	formula:EXPR           an expression over metrics and components (score/formula)
//	ruler                  one LLM-judge call per group, relative scores in [0,1] (score/ruler)
//	NAME=formula:EXPR      the same, written under component NAME (also NAME=ruler)
//
// so that --scorer ruler --scorer 'final=formula:0.8*ruler + 0.2*env'
// ends with the blend as the reward and keeps both parts.
//
// Nothing is lost: the first time a trajectory with a reward passes through
// hone-score, that reward is the environment's and is kept as component
// "env"; when a later run changes the reward, the one before is kept as
// component "previous". The chain that scored a row is recorded in its
// metadata under MetaChain. So are components: re-scoring with another
// chain keeps those of the earlier one that this chain does not write,
// unchanged (an old "final" beside a new "final2"), and a formula may
// read them by name, which is how a ruler component scored once is
// blended anew without a judge call. They are the earlier chain's values:
// the reward, "previous" and MetaChain say what this chain gave.
//
// Rows whose episode failed in collection (their error is set, by
// hone-collect or any other writer) are never scored: the scorers see each
// group without them, as hone-train does, and they are written as they
// were read, reward still null, and counted in the summary. A group whose
// every row failed is written untouched and counted as such.
//
// RULER judges a group of one (also one left with a single row by failed
// episodes) alone, on an absolute scale: see score/ruler.
//
// Judge failures (transport errors, timeouts, malformed answers after the
// retries, a prompt that cannot fit --judge-context-tokens) follow
// --on-judge-error: fail stops the run (exit 1, nothing
// written), skip drops the group from the output and counts it, mark
// writes the group as it was read, with the reason in the error field of
// each row that was to be scored, and counts it; when the judge failed
// every group it was given, skip and mark still write the output but end
// with ErrJudgeFailedAll (exit 1); where that output would replace an
// input (-o names it), hone-score discards it instead and leaves the
// input as it was, as it does on an interrupt. Bad input — a formula naming a metric a row lacks, an env
// reward that is missing or not a finite number — always stops the run (exit 2).
//
// Re-runs are cheap and stable: judge verdicts are cached on disk (see
// score/judgecache), the same input and chain give byte-identical rows,
// and --only-missing passes through, untouched, every group whose rows all
// have a reward and every component of the chain, even where another chain
// wrote them (a changed formula under the same name): one warning a run
// counts those groups and names both chains.
//
// Like every stage, the package exposes Options (AddFlags) and
// Run(ctx, opts) error, which hands its counts to Options.Summary; it reads
// no environment variable (cmd/hone-score fills the judge's endpoint and
// key from $OPENAI_BASE_URL and $OPENAI_API_KEY) and marks its errors with
// internal/stageerr's kinds.
package score
