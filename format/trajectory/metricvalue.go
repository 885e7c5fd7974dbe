package trajectory

import (
	"bytes"
	"encoding/json"
)

// MetricValue reads one metric value as every stage that takes metrics
// from a user reads it (a stdio environment's response, the proxy's reward
// and close routes, an ART JSONL line): a JSON number as it is, true and
// false as 1 and 0, since ART's metrics may be booleans (its
// dict[str, float | int | bool]). null is reported apart (isNull), for
// each caller to say how it reports it: every caller leaves the metric
// out of the row (a metric that does not apply), the live routes warning
// once per name, JSONL import once per file. ok is
// false for anything else (a string, an object, an array); the caller
// names the metric in its error.
func MetricValue(v json.RawMessage) (value float64, isNull, ok bool) {
	switch s := string(bytes.TrimSpace(v)); s {
	case "null":
		return 0, true, true
	case "true":
		return 1, false, true
	case "false":
		return 0, false, true
	}
	if json.Unmarshal(v, &value) != nil {
		return 0, false, false
	}
	return value, false, true
}
