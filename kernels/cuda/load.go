package cuda

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The libraries are loaded at run time (dlopen through purego, no cgo), so
// that every binary builds and starts on a machine without CUDA; only
// --device cuda looks for them. Sonames are tried newest first: the lent GPU
// machines run CUDA 13, Debian's toolkit is 11.8.

// driverSonames are the names the driver library goes by (it keeps .so.1
// across CUDA versions).
func driverSonames() []string { return []string{"libcuda.so.1", "libcuda.so"} }

// versionedSonames returns lib's sonames for CUDA 13, 12 and 11, newest
// first, then the unversioned development link — leaving out the majors
// above maxMajor when it is positive. A driver runs the libraries of its
// own CUDA major and older ones only: cuBLAS 13 beside a CUDA 12 driver
// loads, and then fails in cublasCreate, where cuBLAS 12 would have run.
func versionedSonames(lib string, maxMajor int) []string {
	var names []string
	for _, major := range []int{13, 12, 11} {
		if maxMajor <= 0 || major <= maxMajor {
			names = append(names, fmt.Sprintf("%s.so.%d", lib, major))
		}
	}
	return append(names, lib+".so")
}

// sonameMajor returns N of a library path ending ".so.N" or ".so.N.…"
// (libcublas.so.12, …/libcublas.so.12.4.5.8), 0 for any other name.
func sonameMajor(path string) int {
	_, after, ok := strings.Cut(filepath.Base(path), ".so.")
	if !ok {
		return 0
	}
	digits, _, _ := strings.Cut(after, ".")
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// symbol binds one C entry point to a Go function variable.
type symbol struct {
	name     string
	fptr     any  // pointer to a func variable
	optional bool // a missing optional symbol leaves the variable nil
}

// openLib dlopens path when it is set, else the first of sonames that loads
// and has every required symbol (bound by bind). It returns the
// name it used and the names it tried.
func openLib(path string, sonames []string, bind func(handle uintptr) error) (used string, tried []string, err error) {
	names := sonames
	if path != "" {
		names = []string{path}
	}
	var errs []string
	for _, name := range names {
		tried = append(tried, name)
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if err := bind(h); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
			_ = purego.Dlclose(h)
			continue
		}
		return name, tried, nil
	}
	return "", tried, errors.New(strings.Join(errs, "; "))
}

// bindAll resolves syms in the library handle.
func bindAll(handle uintptr, syms []symbol) error {
	for _, s := range syms {
		addr, err := purego.Dlsym(handle, s.name)
		if err != nil {
			if s.optional {
				continue
			}
			return fmt.Errorf("missing symbol %s: %w", s.name, err)
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	return nil
}

// goString copies the NUL-terminated C string at p.
func goString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// cInt converts a size to a C int, which every cuBLAS size is.
func cInt(what string, v int) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s = %d does not fit a C int", what, v)
	}
	return int32(v), nil
}
