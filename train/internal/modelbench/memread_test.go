package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// wordSum is sumWords written out plainly.
func wordSum(b []byte) uint64 {
	var s uint64
	for i := 0; i+8 <= len(b); i += 8 {
		s += binary.LittleEndian.Uint64(b[i:])
	}
	return s
}

// TestSumWords checks the read kernel adds every word, at lengths around
// its 16-word blocks and at unaligned starts.
func TestSumWords(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 8*200+7)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, off := range []int{0, 1, 4, 7} {
		for _, words := range []int{0, 1, 15, 16, 17, 63, 64, 65, 199} {
			b := buf[off : off+8*words]
			if got, want := sumWords(b), wordSum(b); got != want {
				t.Errorf("offset %d, %d words: %#x, want %#x", off, words, got, want)
			}
		}
	}
}

// TestPlainReadReadsEverything checks that however the buffers are split
// among the workers, every word is read once.
func TestPlainReadReadsEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var bufs [][]byte
	var want uint64
	for _, n := range []int{8, 24, 8 * 1001, 8 * 3, 800} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		bufs = append(bufs, b)
		want += wordSum(b)
	}
	for _, w := range []int{0, 1, 2, 3, 7} {
		d, got := plainRead(bufs, w)
		if got != want || d <= 0 {
			t.Errorf("%d workers: checksum %#x in %v, want %#x", w, got, d, want)
		}
	}
}

func TestPairedRounds(t *testing.T) {
	bufs := [][]byte{make([]byte, 1<<16)}
	steps := 0
	ms, err := pairedRounds(bufs, 2, 8, 5, func() error { steps++; return nil })
	if err != nil || steps != 5 || ms.ReadTokensPerS <= 0 || ms.StepOverRead <= 0 {
		t.Fatalf("%+v, %v after %d steps", ms, err, steps)
	}
	boom := errors.New("boom")
	if _, err := pairedRounds(bufs, 2, 8, 5, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("step error lost: %v", err)
	}
}

// The memory table lists Hone's decode rows that carry a read figure, with
// the medians of their runs, and leaves out failed runs and other rows.
func TestWriteMemoryTable(t *testing.T) {
	var out bytes.Buffer
	table := []line{
		{r: row{name: "train-tiny", train: true}, hone: []result{{TokensPerS: 100}}},
		{r: row{name: "decode-05b-b1-f32", batch: 1}, hone: []result{
			{TokensPerS: 19, ReadTokensPerS: 20, StepOverRead: 1.02},
			{Err: errors.New("died"), ReadTokensPerS: 99, StepOverRead: 9},
			{TokensPerS: 18, ReadTokensPerS: 18, StepOverRead: 1.00},
			{TokensPerS: 22, ReadTokensPerS: 23, StepOverRead: 0.98},
		}},
		{r: row{name: "decode-05b-b8-f32", batch: 8}, torch: []result{{TokensPerS: 40}}},
	}
	writeMemoryTable(&out, table)
	s := out.String()
	if !strings.Contains(s, "decode-05b-b1-f32") || !strings.Contains(s, "20.00 (18.0–23.0)") || !strings.Contains(s, "1.00") {
		t.Fatalf("memory table:\n%s", s)
	}
	if strings.Contains(s, "train-tiny") || strings.Contains(s, "b8") || strings.Contains(s, "99") {
		t.Fatalf("memory table lists rows or runs it should not:\n%s", s)
	}
	out.Reset()
	writeMemoryTable(&out, table[:1])
	if out.Len() != 0 {
		t.Fatalf("a table without decode rows printed %q", out.String())
	}
}
