// Package scoretest is the shared test suite of the score.Scorer
// contract, run against every scorer (env, formula, ruler with a fake
// judge).
package scoretest
