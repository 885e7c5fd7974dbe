package flagval

import (
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestOptionalFloat(t *testing.T) {
	for _, unset := range []float64{math.NaN(), -1} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var v float64
		OptionalFloat(fs, &v, "temperature", unset, "sampling temperature (default: the server's)")
		help := fs.FlagUsages()
		if strings.Contains(help, "(default NaN)") || strings.Contains(help, "(default -1)") || !strings.Contains(help, "--temperature float") {
			t.Errorf("unset %v: help line %q", unset, help)
		}
		if err := fs.Parse(nil); err != nil || !(v == unset || math.IsNaN(v) && math.IsNaN(unset)) {
			t.Errorf("unset %v: not given, holds %v (%v)", unset, v, err)
		}
		if err := fs.Parse([]string{"--temperature", "0.7"}); err != nil || v != 0.7 {
			t.Errorf("unset %v: --temperature 0.7 gave %v (%v)", unset, v, err)
		}
		if got := fs.Lookup("temperature").Value.String(); got != "0.7" {
			t.Errorf("unset %v: String after set = %q", unset, got)
		}
	}
	for _, bad := range []string{"warm", "NaN", "inf", "-Inf"} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var v float64
		OptionalFloat(fs, &v, "temperature", math.NaN(), "")
		err := fs.Parse([]string{"--temperature", bad})
		if err == nil || !strings.Contains(err.Error(), `"--temperature"`) {
			t.Errorf("--temperature %s: err %v, want one naming the flag", bad, err)
		}
	}
}
