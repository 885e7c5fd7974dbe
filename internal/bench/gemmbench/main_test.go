package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRunQuick runs the smoke configuration and checks that every section
// printed figures and the BLAS environment line.
func TestRunQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~150 MB of weights")
	}
	var out bytes.Buffer
	o := Options{Quick: true, Reps: 1, GEMMs: "gonum", Sections: "squares,mlp,output,decode"}
	if err := Run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"BLAS environment:", "n=256 cpu/gonum", "T=16 cpu/gonum", "T=16 cpu/gonum LogprobForward", "float32", "bfloat16", "tokens/s"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestRunBadOptions(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Reps: 1, GEMMs: "gonum", Sections: "everything"}, &out); err == nil {
		t.Error("unknown section accepted")
	}
	if err := Run(context.Background(), Options{Reps: 0, GEMMs: "gonum", Sections: "squares"}, &out); err == nil {
		t.Error("--reps 0 accepted")
	}
	if err := Run(context.Background(), Options{Reps: 1, GEMMs: "mkl", Sections: "squares"}, &out); err == nil {
		t.Error("unknown contender accepted")
	}
}

// TestRunOneSection: a single section still gets its token sizes.
func TestRunOneSection(t *testing.T) {
	var out bytes.Buffer
	o := Options{Reps: 1, GEMMs: "gonum", Sections: "output", Tokens: []int{2}, Vocab: 5000}
	if err := Run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "T=2 cpu/gonum LogprobForward") || strings.Contains(s, "MLP") {
		t.Errorf("output section alone:\n%s", s)
	}
}
