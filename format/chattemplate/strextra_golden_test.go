package chattemplate

import "testing"

// TestStrExtraMatchJinja2 renders the templates of
// testdata/strextra/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: str.join, splitlines,
// removeprefix, removesuffix, zfill, ljust, rjust, center and the
// isdigit, isalpha, isspace, isalnum, isupper and islower tests are
// Python's, with its TypeErrors ("\n\n".join(xs) was "not callable").
func TestStrExtraMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "strextra", jinja2Messages)
}
