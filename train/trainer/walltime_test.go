package trainer

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
)

// Each metrics row, and the state saved with its step, carries "time": the
// Unix seconds at which the step ended, within the run, not decreasing.
func TestMetricsRowsCarryWallTime(t *testing.T) {
	l, log := finiteLoop(t, 1e-3, func(int) LossFunc { return nll(nil, 0) })
	before := float64(time.Now().UnixMilli()) / 1e3
	if err := l.Run(context.Background(), 0, 2); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	after := float64(time.Now().UnixMilli()) / 1e3
	f, err := os.Open(filepath.Join(l.Ckpt.Dir, runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var times []float64
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var row map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		tm, ok := row["time"]
		if !ok || tm < before || tm > after || (len(times) > 0 && tm < times[len(times)-1]) {
			t.Errorf("row %v: time %v (present %v), want in [%v, %v] and not before the last row's", row, tm, ok, before, after)
		}
		times = append(times, tm)
	}
	if len(times) != 2 {
		t.Fatalf("%d rows, want 2", len(times))
	}
	st, err := l.Ckpt.ReadState(2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Metrics["time"] != times[1] {
		t.Errorf("saved state's time %v, metrics row's %v", st.Metrics["time"], times[1])
	}
}
