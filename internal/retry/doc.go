// Package retry is the one retry decorator of Hone's clients: collect's
// policy model calls and score's judge calls both repeat a failed call
// through Do, with a Policy that says how many calls at most, which
// failures may pass when asked again, and how long to wait in between.
// Status says which HTTP answers are worth repeating (429, 408 and 5xx),
// and Answer which error answers, from their status and error code (not
// hone-serve's 500s for a sequence left with no token to choose), and
// Label the words a failed call's error names such an answer by;
// timeouts and broken connections are the callers' to classify, since
// only they know which errors their client returns for them.
//
// It imports nothing of ours, so that every stage may use it.
package retry
