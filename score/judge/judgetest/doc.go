// Package judgetest provides a scripted OpenAI-compatible judge server
// for tests: an httptest server speaking /v1/chat/completions whose
// answers a test script decides, which records every request and counts
// hits, so tests can check prompt assembly, retries, error handling and
// caching deterministically; and Suite, the contract every judge.Judge
// keeps, run against each implementation and decorator.
package judgetest
