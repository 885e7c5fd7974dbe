package model

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/kernels/hugepage"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestSlabHugePages: a slab the pool allocates on a host backend lies, past
// its first huge-page boundary, in a mapping advised for transparent huge
// pages (VmFlags "hg" in /proc/self/smaps), so that a training pass faults
// its activations in 2 MiB at a time. Skipped where the kernel keeps
// transparent huge pages off or has no smaps (not Linux).
func TestSlabHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v)", mode, err)
	}
	sp := slabPool{be: ref.New()}
	s, err := sp.get(4 * hugepage.Size / 4) // 4 huge pages of float32 values
	if err != nil {
		t.Fatal(err)
	}
	defer sp.put(s)
	start := uintptr(unsafe.Pointer(&s[0]))
	inside := (start + hugepage.Size - 1) &^ (hugepage.Size - 1) // the first aligned address in s
	flags, err := vmFlags(inside)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the slab's mapping at %#x has VmFlags %q, want hg (MADV_HUGEPAGE)", inside, flags)
	}
}

// vmFlags returns the VmFlags of the mapping of this process that holds
// addr, from /proc/self/smaps.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping of this process holds %#x", addr)
}
