package flagval

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestPositiveDuration(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var d time.Duration
	PositiveDuration(fs, &d, "start-timeout", time.Minute, "wall time to start")
	if help := fs.FlagUsages(); !strings.Contains(help, "--start-timeout duration") || !strings.Contains(help, "(default 1m0s)") {
		t.Errorf("help line %q", help)
	}
	if err := fs.Parse(nil); err != nil || d != time.Minute {
		t.Errorf("not given: %v (%v), want the default 1m", d, err)
	}
	if err := fs.Parse([]string{"--start-timeout", "90s"}); err != nil || d != 90*time.Second {
		t.Errorf("--start-timeout 90s gave %v (%v)", d, err)
	}
	for _, bad := range []string{"0", "0s", "-1s", "soon"} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		PositiveDuration(fs, &d, "start-timeout", time.Minute, "")
		if err := fs.Parse([]string{"--start-timeout", bad}); err == nil || !strings.Contains(err.Error(), `"--start-timeout"`) {
			t.Errorf("--start-timeout %s: err %v, want one naming the flag", bad, err)
		}
		if d != time.Minute {
			t.Errorf("--start-timeout %s refused, but the value is now %v", bad, d)
		}
	}
}
