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
	"strconv"
	"strings"
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
	// Torn is the line number of a last line that is cut short (no
	// newline ends it, and it is no JSON object), left out; 0 when none.
	// A kill mid-append leaves one, and a run writing its row while the
	// file is read shows one; hone-train drops it when the run resumes
	// (checkpoint.RepairMetrics).
	Torn int
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
	torn, err := eachObject(r, name, func(line int, obj map[string]any) error {
		step := float64(len(m.Steps) + 1)
		if v, ok := obj["step"]; ok {
			s, ok := stepNumber(v)
			if !ok {
				return fmt.Errorf("%s:%d: step %s is not an integer from 0 to 2^53", name, line, jsonText(v))
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
				if n, isNum := v.(json.Number); isNum {
					// A number a float64 cannot hold (1e999): hone-train
					// never writes one, and leaving it out would drop its
					// chart without a word.
					return fmt.Errorf("%s:%d: %q is %s, which a float64 cannot hold", name, line, k, n)
				}
				continue // a string or other non-number (a label)
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
	m.Torn = torn
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
	// Settings are how the evaluation ran: string values ("model": "rl")
	// and the numeric keys in settingKeys. They are shown in the table, not
	// plotted.
	Settings map[string]string
	// Run names the run whose wall-time and token axes place the row
	// ("" for the first run).
	Run string
	// Where is "file:line", for messages.
	Where string
}

// settingKeys are numeric keys that describe how an evaluation ran rather
// than how it went: plotting the temperature over steps says nothing.
var settingKeys = map[string]bool{"temperature": true, "top_p": true, "max_tokens": true, "episodes": true, "seed": true}

// maxEvalFile bounds an eval file, which is read whole: a few hundred
// bytes a row.
const maxEvalFile = 64 << 20

// ReadEval parses an eval file (see the package doc for the format): JSON
// objects one a line, as jq -c writes them, or pretty-printed one after
// another, as jq writes them by default, or JSON arrays of such objects.
func ReadEval(r io.Reader, name string) ([]EvalRow, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxEvalFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxEvalFile {
		return nil, fmt.Errorf("%s: larger than %d bytes; is it an eval file?", name, maxEvalFile)
	}
	var rows []EvalRow
	err = eachValue(data, name, func(where string, obj map[string]any) error {
		row, err := evalRow(obj, where)
		if err != nil {
			return err
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

// evalRow reads one eval object; where is "file:line" for messages.
func evalRow(obj map[string]any, where string) (EvalRow, error) {
	row := EvalRow{Metrics: map[string]float64{}, Settings: map[string]string{}, Where: where}
	label, ok := obj["label"].(string)
	if !ok || label == "" {
		return row, fmt.Errorf("%s: missing string \"label\" (what was evaluated, e.g. \"after-grpo\")", where)
	}
	row.Label = label
	if v, ok := obj["step"]; ok {
		s, ok := stepNumber(v)
		if !ok {
			return row, fmt.Errorf("%s: step %s is not an integer from 0 to 2^53", where, jsonText(v))
		}
		row.Step = s
	}
	if v, ok := obj["run"]; ok {
		if row.Run, ok = v.(string); !ok {
			return row, fmt.Errorf("%s: \"run\" is not a string", where)
		}
	}
	for k, v := range obj {
		if k == "label" || k == "step" || k == "run" {
			continue
		}
		y, isNum := number(v)
		switch {
		case isNum && settingKeys[k]:
			row.Settings[k] = strconv.FormatFloat(y, 'g', -1, 64)
		case isNum:
			row.Metrics[k] = y
		default:
			if s, ok := v.(string); ok {
				row.Settings[k] = s
			}
		}
	}
	if len(row.Metrics) == 0 {
		return row, fmt.Errorf("%s: no numeric metric in the row", where)
	}
	return row, nil
}

// eachValue calls fn with every object of a stream of JSON values (objects,
// or arrays of objects) and where it starts, "file:line" ("file:line[i]"
// inside an array).
func eachValue(data []byte, name string, fn func(where string, obj map[string]any) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	for {
		// The value starts after the whitespace that follows the previous one.
		start := dec.InputOffset()
		for start < int64(len(data)) && strings.ContainsRune(" \t\r\n", rune(data[start])) {
			start++
		}
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return fmt.Errorf("%s:%d: %w", name, lineAt(se.Offset), err)
			}
			return fmt.Errorf("%s:%d: %w", name, lineAt(start), err)
		}
		where := fmt.Sprintf("%s:%d", name, lineAt(start))
		switch x := v.(type) {
		case map[string]any:
			if err := fn(where, x); err != nil {
				return err
			}
		case []any:
			for i, e := range x {
				obj, ok := e.(map[string]any)
				if !ok {
					return fmt.Errorf("%s[%d]: not a JSON object", where, i)
				}
				if err := fn(fmt.Sprintf("%s[%d]", where, i), obj); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%s: not a JSON object", where)
		}
	}
}

// eachObject calls fn with every line of r decoded as a JSON object. A final
// line without a newline is accepted; a blank line is not, since in an
// append-only log it means a torn or hand-edited file. A final line without
// a newline that is no JSON object is a torn append: it is skipped, and its
// number returned.
func eachObject(r io.Reader, name string, fn func(line int, obj map[string]any) error) (torn int, err error) {
	lr := &lastByteReader{r: r}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			return 0, fmt.Errorf("%s:%d: blank line", name, line)
		}
		obj, err := decodeObject(b)
		if err != nil {
			// Scan reads on to the end of r only when this line is the last.
			if !sc.Scan() && sc.Err() == nil && lr.last != '\n' {
				return line, nil
			}
			return 0, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if err := fn(line, obj); err != nil {
			return 0, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return 0, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxLine)
		}
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return 0, nil
}

// decodeObject decodes one line holding one JSON object, numbers as
// json.Number.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	return obj, nil
}

// lastByteReader remembers the last byte read, to tell a file that ends in
// a newline from one that stops mid-line.
type lastByteReader struct {
	r    io.Reader
	last byte
}

func (l *lastByteReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.last = p[n-1]
	}
	return n, err
}

// jsonText writes a decoded JSON value as the file had it, for messages:
// %v printed the string "3" as 3, which reads as a valid step, and null
// as <nil>.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
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

// maxStep is the largest step accepted: past 2^53 float64 cannot tell
// steps apart, so rows merged on the x axis, and steps near 1.8e308
// overflowed its padding. A run counts steps in the thousands.
const maxStep = 1 << 53

// stepNumber reports v as a step when it is a JSON integer from 0 to
// maxStep.
func stepNumber(v any) (float64, bool) {
	s, ok := number(v)
	if !ok || s < 0 || s > maxStep || s != math.Trunc(s) {
		return 0, false
	}
	return s, true
}
