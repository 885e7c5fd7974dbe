// Package judgecache owns the on-disk cache of judge verdicts: a decorator
// around judge.Judge that answers a request it has seen before from a JSON
// file instead of calling the judge again, so re-scoring the same groups
// with the same judge model, rubric and prompt version costs nothing.
//
// A file is named by the sha256 of the judge's server (its base URL,
// trailing slash trimmed, its userinfo's password or token masked), the
// request's model, prompt version, system text (which holds the rubric),
// user text (which holds the group's content), trajectory ids and
// sampling temperature (when one is asked for), and sits in a two-level
// directory (DIR/ab/abcdef….json). Only verdicts that passed validation are stored.
// Writes go through fileset.Create (a temporary file renamed into place,
// or one upload), so concurrent runs and crashes leave either a whole
// entry or none. DIR may be an object-store folder (s3://bucket/cache), so
// the shards of a scoring job share one cache. A file that cannot be read
// back, or whose scores judge.Parse would refuse (missing, or outside
// [0,1]), is treated as a miss and rewritten.
package judgecache
