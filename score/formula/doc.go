// Package formula owns the formula scorer: a reward computed per
// trajectory from an expression (github.com/expr-lang/expr syntax) over
// the trajectory's metrics and the reward components earlier scorers in
// the chain wrote.
//
// Names an expression can use:
//
//   - every metric and every component by its own name (a component
//     shadows a metric of the same name, so a name that is a component
//     on some rows and a metric alone on others reads each in turn:
//     Scorer.Mixed names it, and hone-score warns, by the rows' contents
//     and not the branches taken, except of a name read only where an in
//     test shows it a component: "x" in components ? x : metrics.x), e.g.
//     win - 0.1*illegal; a
//     name given to Scorer.ComponentNames (in hone-score, the names its
//     chain writes: env, previous and each scorer's) is the component
//     only, missing on a row without it (env where the reward was null),
//     never a metric there, which is then metrics["env"];
//   - metrics["name"] and components["name"] for names that are not
//     identifiers (e.g. "judge/score");
//   - reward: the reward so far in the chain (absent while it is null;
//     before any scorer of hone-score's chain, the environment's, env,
//     also on a row an earlier run scored, whose reward is that run's),
//     which hides a metric named reward (read it as metrics["reward"]);
//     hone-score refuses a component of that name for the same reason;
//   - metadata["key"]: the trajectory's string metadata;
//   - group_metrics["name"]: the metrics of the trajectory's group as a
//     whole (the file's group_metrics, ART's TrajectoryGroup(metrics=…)),
//     the same on every row of the group; never read by a bare name,
//     which is the row's own. Read as metrics["name"] is: missing and
//     unguarded it fails the row, guarded (?? 0) and on no row it is
//     among the names Scorer.Unseen names.
//   - group_metadata["key"]: the string metadata of the trajectory's
//     group as a whole (the file's group_metadata, ART's
//     TrajectoryGroup(metadata=…); hone-collect's scenario_id, env,
//     split and seed), read as metadata["key"] is: nil where the group
//     lacks the key; never read by a bare name.
//
// The result must be a finite number (a boolean counts as 1 or 0). An
// expression that does not compile is a usage error naming it, as is a
// call of a function expr lacks (sqrt, log: it names those that exist)
// and a Python floor division a // b (in expr, // starts a comment that
// would drop the rest: write floor(a / b)); a name the
// trajectory lacks (bare, or as metrics["name"], components["name"] or
// group_metrics["name"]),
// or a result that is not a finite number, is an error naming the
// expression, the group and the trajectory. In hone-score's chain a
// formula may not read a component that a later scorer or the formula
// itself writes (Scorer.Components; a usage error), which on rows scored
// before would be the earlier run's value, nor "previous", which the
// chain writes after every scorer. A lookup is nil when missing, as
// expr gives it, where that read is guarded: metrics["x"] ?? 0,
// metrics?.x, metrics.x == nil (each read on its own: the right of
// (metrics.x ?? 0) + metrics.x must find x); one that a test shows
// there leads to ("x" in metrics ? metrics.x : 0) is read only then,
// and needs no guard. A bare name is nil when missing
// (reward ?? 0, env == nil) where every read of it is guarded, a read
// that only a test showing it there leads to included
// (reward == nil ? 0 : reward, reward != nil && reward > 0,
// "env" in components ? env : 0, "x" in metrics ? x : 0; not so a
// metrics test of reward or of a name given to Scorer.ComponentNames,
// which a metric of that name never shows there). Any other
// bare name must be on every row; a lookup only when it is read, so one in a branch not taken
// (metadata["env"] == "guess" ? metrics.solved : metrics.won) or right of
// a ?? whose left is there may be missing. Such a name, misspelt, is
// nil on every row and not an error: Scorer.Unseen names each name the
// expression reads that no row it scored had (hone-score warns of each
// once a run, with the rows' closest name).
package formula
