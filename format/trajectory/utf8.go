package trajectory

import (
	"maps"
	"slices"
	"unicode/utf8"
)

// A Parquet string column holds UTF-8 only: DuckDB and pyarrow refuse a
// file whose strings are not, so one stray byte in an error message or a
// log line would make a whole file unreadable to them. The writer writes
// each byte of a string that is not part of a UTF-8 character as U+FFFD, as encoding/json does
// (and Python's errors="replace"). The stages read every string they store
// from JSON, which is valid already; what is left is text a stage
// builds from bytes (a program's stderr, a server's error body), where the
// replacement loses nothing anyone could read.

// validString returns s with each byte that is not part of a UTF-8
// character as U+FFFD, as the JSON Lines import (validString) replaces it.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(validUTF8([]byte(s)))
}

// validUTF8Map returns m, or a copy of it with every key and value valid
// UTF-8 when one is not (the caller's map is not modified). Keys that
// become equal keep the value of the last in key order.
func validUTF8Map[V any](m map[string]V, value func(V) V) map[string]V {
	ok := true
	for k, v := range m {
		if !utf8.ValidString(k) {
			ok = false
			break
		}
		if s, isStr := any(v).(string); isStr && !utf8.ValidString(s) {
			ok = false
			break
		}
	}
	if ok {
		return m
	}
	// In key order, so that which value a collision keeps does not
	// depend on the map's iteration order: the same group writes the same file.
	out := make(map[string]V, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[validString(k)] = value(m[k])
	}
	return out
}

func sameValue[V any](v V) V { return v }

// makeValidUTF8 makes every string of r valid UTF-8 (see above). The row's
// slices and maps are its own (toRow made them) or the caller's, which
// are copied before a change, never changed in place.
func (r *row) makeValidUTF8() {
	for _, p := range []*string{&r.Run, &r.Model, &r.Adapter, &r.ScenarioID, &r.Split, &r.Payload,
		&r.GroupID, &r.TrajectoryID, &r.Env, &r.Error} {
		*p = validString(*p)
	}
	r.Metrics = validUTF8Map(r.Metrics, sameValue[float64])
	r.GroupMetrics = validUTF8Map(r.GroupMetrics, sameValue[float64])
	r.Metadata = validUTF8Map(r.Metadata, validString)
	r.GroupMetadata = validUTF8Map(r.GroupMetadata, validString)
	for i, l := range r.Logs {
		if !utf8.ValidString(l) {
			r.Logs = append([]string(nil), r.Logs...)
			for j := i; j < len(r.Logs); j++ {
				r.Logs[j] = validString(r.Logs[j])
			}
			break
		}
	}
	for i := range r.RewardComponents {
		c := &r.RewardComponents[i]
		c.Name, c.Explanation = validString(c.Name), validString(c.Explanation)
	}
	validUTF8History(r.Messages, r.Tools)
	for _, h := range r.AdditionalHistories {
		validUTF8History(h.Messages, h.Tools)
	}
}

// validUTF8History fixes one conversation's rows in place (toRow made them).
func validUTF8History(msgs []messageRow, tools []toolRow) {
	for i := range msgs {
		m := &msgs[i]
		for _, p := range []*string{&m.Role, &m.Content, &m.ContentParts, &m.ToolCallID, &m.Name,
			&m.ReasoningContent, &m.FinishReason, &m.AnswerModel} {
			*p = validString(*p)
		}
		for j := range m.ToolCalls {
			c := &m.ToolCalls[j]
			c.ID, c.Type, c.Name, c.Arguments = validString(c.ID), validString(c.Type), validString(c.Name), validString(c.Arguments)
		}
	}
	for i := range tools {
		t := &tools[i]
		t.Type, t.Name, t.Description, t.Parameters = validString(t.Type), validString(t.Name), validString(t.Description), validString(t.Parameters)
	}
}
