package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// Series is one named quantity over steps; X is sorted ascending.
type Series struct {
	Name string
	X, Y []float64
}

// Metrics is a parsed metrics.jsonl: one Series per numeric key, sorted by
// name. Steps holds the step of every row in file order.
type Metrics struct {
	File   string
	Steps  []float64
	Series []Series
}

// Get returns the series called name, or nil.
func (m *Metrics) Get(name string) *Series {
	for i := range m.Series {
		if m.Series[i].Name == name {
			return &m.Series[i]
		}
	}
	return nil
}

// maxLine bounds one JSONL line; a metrics row is a few hundred bytes.
const maxLine = 16 << 20

// ReadMetrics parses a metrics.jsonl stream; name is the file name used in
// errors ("adapters/r1/metrics.jsonl:7: ...").
func ReadMetrics(r io.Reader, name string) (*Metrics, error) {
	m := &Metrics{File: name}
	byName := map[string]*Series{}
	err := eachObject(r, name, func(line int, obj map[string]any) error {
		step := float64(len(m.Steps) + 1)
		if v, ok := obj["step"]; ok {
			s, ok := number(v)
			if !ok || s < 0 || s != math.Trunc(s) {
				return fmt.Errorf("%s:%d: step %v is not a non-negative integer", name, line, v)
			}
			step = s
		}
		if n := len(m.Steps); n > 0 && step <= m.Steps[n-1] {
			return fmt.Errorf("%s:%d: step %g does not follow step %g (a resumed run whose metrics were not repaired?)", name, line, step, m.Steps[n-1])
		}
		m.Steps = append(m.Steps, step)
		for k, v := range obj {
			if k == "step" {
				continue
			}
			y, ok := number(v)
			if !ok {
				continue
			}
			s := byName[k]
			if s == nil {
				s = &Series{Name: k}
				byName[k] = s
			}
			s.X = append(s.X, step)
			s.Y = append(s.Y, y)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(m.Steps) == 0 {
		return nil, fmt.Errorf("%s: no metrics rows", name)
	}
	for _, s := range byName {
		m.Series = append(m.Series, *s)
	}
	sort.Slice(m.Series, func(i, j int) bool { return m.Series[i].Name < m.Series[j].Name })
	return m, nil
}

// EvalRow is one evaluation: the label of what was evaluated, the step it
// belongs to, and its numeric metrics.
type EvalRow struct {
	Label   string
	Step    float64
	Metrics map[string]float64
	// Where is "file:line", for messages.
	Where string
}

// ReadEval parses an eval JSONL stream (see the package doc for the format).
func ReadEval(r io.Reader, name string) ([]EvalRow, error) {
	var rows []EvalRow
	err := eachObject(r, name, func(line int, obj map[string]any) error {
		row := EvalRow{Metrics: map[string]float64{}, Where: fmt.Sprintf("%s:%d", name, line)}
		label, ok := obj["label"].(string)
		if !ok || label == "" {
			return fmt.Errorf("%s:%d: missing string \"label\"", name, line)
		}
		row.Label = label
		if v, ok := obj["step"]; ok {
			s, ok := number(v)
			if !ok || s < 0 || s != math.Trunc(s) {
				return fmt.Errorf("%s:%d: step %v is not a non-negative integer", name, line, v)
			}
			row.Step = s
		}
		for k, v := range obj {
			if k == "label" || k == "step" {
				continue
			}
			if y, ok := number(v); ok {
				row.Metrics[k] = y
			}
		}
		if len(row.Metrics) == 0 {
			return fmt.Errorf("%s:%d: no numeric metric in the row", name, line)
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no eval rows", name)
	}
	return rows, nil
}

// eachObject calls fn with every line of r decoded as a JSON object. A final
// line without a newline is accepted; a blank line is not, since in an
// append-only log it means a torn or hand-edited file.
func eachObject(r io.Reader, name string, fn func(line int, obj map[string]any) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			return fmt.Errorf("%s:%d: blank line", name, line)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if obj == nil {
			return fmt.Errorf("%s:%d: not a JSON object", name, line)
		}
		if dec.More() {
			return fmt.Errorf("%s:%d: trailing data after the JSON object", name, line)
		}
		if err := fn(line, obj); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxLine)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// number reports v as a finite float64 when it is a JSON number.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
