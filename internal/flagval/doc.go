// Package flagval holds pflag values and checks that several stages'
// Options share: a float flag whose "no value" is a sentinel (NaN, -1)
// that the usage text explains in words, so that --help does not print the
// sentinel as if it were a setting; a duration flag that refuses 0 and
// negative values (PositiveDuration); and the rule for an OpenAI-compatible
// base URL a stage calls (BaseURL).
package flagval
