// Package envtest holds Fake, an in-memory environment for testing the
// agent loop, and Suite, the behaviour every env.Env must show: scenarios
// that repeat for a seed, scripted policies that finish inside the limits
// with rewards in range and play the same game again for the same seed,
// every well-formed tool call answered, and episodes that survive garbage
// turns.
package envtest
