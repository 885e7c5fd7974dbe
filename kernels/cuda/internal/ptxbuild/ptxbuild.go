// Package ptxbuild compiles kernels/cuda's CUDA C sources (*.cu) ahead of
// time to PTX with nvcc, and assembles PTX with ptxas to see its register
// use and spills. It is the one place the flags are written: `make ptx`
// (kernels/cuda/internal/ptxgen) writes the committed PTX with it, and
// kernels/cuda's tests regenerate and check that PTX with it.
//
// The toolkit is Debian's non-free nvidia-cuda-toolkit (CUDA 11.8), whose
// nvcc wants a host compiler no newer than GCC 11: g++-11 comes with it.
package ptxbuild

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Arches returns the virtual architectures every kernel is compiled for
// (compute_80: A100; compute_90: H100/H200). The driver JITs PTX to the
// device's own architecture, so a newer device runs the newest of these.
func Arches() []int { return []int{80, 90} }

// FileName is the PTX file of module (a .cu file's base name) for arch:
// "rmsnorm.compute_90.ptx".
func FileName(module string, arch int) string {
	return fmt.Sprintf("%s.compute_%d.ptx", module, arch)
}

// Sources returns the modules in dir: the base names of its *.cu files,
// sorted.
func Sources(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var mods []string
	for _, e := range ents {
		if name := e.Name(); !e.IsDir() && strings.HasSuffix(name, ".cu") {
			mods = append(mods, strings.TrimSuffix(name, ".cu"))
		}
	}
	sort.Strings(mods)
	if len(mods) == 0 {
		return nil, fmt.Errorf("no *.cu files in %s", dir)
	}
	return mods, nil
}

// Toolkit is the compilers used.
type Toolkit struct {
	NVCC    string // nvcc
	Ptxas   string // ptxas
	HostCXX string // nvcc's host compiler (-ccbin)
}

// FindToolkit finds nvcc (the nvcc argument when not empty, else nvcc on
// $PATH, else in the toolkit's usual places), ptxas (beside nvcc, else on
// $PATH) and a host compiler nvcc 11.8 accepts (ccbin when not empty, else
// g++-11, else g++-12, which needs -allow-unsupported-compiler and is given
// it). What is missing comes back as an error wrapping exec.ErrNotFound.
func FindToolkit(nvcc, ccbin string) (Toolkit, error) {
	return findToolkit(nvcc, ccbin, []string{"/usr/lib/nvidia-cuda-toolkit/bin/nvcc", "/usr/local/cuda/bin/nvcc"})
}

// findToolkit is FindToolkit with the places nvcc is looked for after $PATH.
func findToolkit(nvcc, ccbin string, nvccPaths []string) (Toolkit, error) {
	var tk Toolkit
	find := func(what string, names ...string) (string, error) {
		for _, n := range names {
			if n == "" {
				continue
			}
			if p, err := exec.LookPath(n); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: none of %s found (Debian: apt-get install nvidia-cuda-toolkit, from non-free): %w",
			what, strings.Join(slicesNonEmpty(names), ", "), exec.ErrNotFound)
	}
	var err error
	if tk.NVCC, err = find("nvcc", append([]string{nvcc, "nvcc"}, nvccPaths...)...); err != nil {
		return tk, err
	}
	if tk.Ptxas, err = find("ptxas", filepath.Join(filepath.Dir(tk.NVCC), "ptxas"), "ptxas"); err != nil {
		return tk, err
	}
	if tk.HostCXX, err = find("nvcc's host C++ compiler", ccbin, "g++-11", "g++-12"); err != nil {
		return tk, err
	}
	return tk, nil
}

func slicesNonEmpty(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// run runs a command, its combined output in the error when it fails.
func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out, nil
}

// Compile compiles srcDir/module.cu to PTX for compute_arch and returns the
// PTX text. nvcc runs in srcDir on the file's base name, so the output does
// not depend on where the repository is checked out.
func (tk Toolkit) Compile(ctx context.Context, srcDir, module string, arch int) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "ptxbuild")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, FileName(module, arch))
	if _, err := run(ctx, srcDir, tk.NVCC, "-ccbin", tk.HostCXX, "-allow-unsupported-compiler",
		"-std=c++17", "-O3", "-ptx", fmt.Sprintf("-arch=compute_%d", arch), "-o", out, module+".cu"); err != nil {
		return nil, fmt.Errorf("PTX of %s.cu for compute_%d: %w", module, arch, err)
	}
	return os.ReadFile(out)
}

// Generate compiles every module of srcDir for every arch, and only when
// all of them compiled writes the PTX into outDir and removes the *.ptx
// files of outDir that no source makes. It returns the files written.
// The files are written in place (os.WriteFile): they are committed, and a
// torn one is what TestPTXCurrent and git diff show.
func (tk Toolkit) Generate(ctx context.Context, srcDir, outDir string) ([]string, error) {
	mods, err := Sources(srcDir)
	if err != nil {
		return nil, err
	}
	ptx := map[string][]byte{}
	var names []string
	for _, m := range mods {
		for _, a := range Arches() {
			b, err := tk.Compile(ctx, srcDir, m, a)
			if err != nil {
				return nil, err
			}
			name := FileName(m, a)
			ptx[name] = b
			names = append(names, name)
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, name := range names {
		dst := filepath.Join(outDir, name)
		if err := os.WriteFile(dst, ptx[name], 0o644); err != nil {
			return written, err
		}
		written = append(written, dst)
	}
	ents, err := os.ReadDir(outDir)
	if err != nil {
		return written, err
	}
	for _, e := range ents {
		if _, ok := ptx[e.Name()]; !ok && strings.HasSuffix(e.Name(), ".ptx") {
			if err := os.Remove(filepath.Join(outDir, e.Name())); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// Function is what ptxas -v says of one function it compiled.
type Function struct {
	Name        string
	Entry       bool   // a kernel (.entry), not a device function
	Target      string // "sm_90"
	Registers   int
	StackFrame  int // bytes
	SpillStores int // bytes
	SpillLoads  int // bytes
}

// Assemble assembles PTX text for sm_arch with ptxas -v and returns what
// it said of each function. ptxas refusing the PTX is an error.
func (tk Toolkit) Assemble(ctx context.Context, ptx []byte, arch int) ([]Function, error) {
	tmp, err := os.MkdirTemp("", "ptxas")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	in := filepath.Join(tmp, "in.ptx")
	if err := os.WriteFile(in, ptx, 0o644); err != nil {
		return nil, err
	}
	out, err := run(ctx, tmp, tk.Ptxas, "-v", fmt.Sprintf("-arch=sm_%d", arch), "-o", filepath.Join(tmp, "out.cubin"), in)
	if err != nil {
		return nil, err
	}
	return ParsePtxasInfo(string(out))
}

var (
	reEntry = regexp.MustCompile(`^ptxas info\s*: Compiling entry function '([^']+)' for '([^']+)'`)
	reFunc  = regexp.MustCompile(`^ptxas info\s*: Function properties for (\S+)`)
	reProps = regexp.MustCompile(`^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reRegs  = regexp.MustCompile(`^ptxas info\s*: Used (\d+) registers`)
)

// ParsePtxasInfo reads ptxas -v's report: per function, "Compiling entry
// function 'f' for 'sm_90'" (kernels only), "Function properties for f"
// followed by its stack frame and spills, and "Used N registers". A
// function named without its properties line is an error: the format
// changed and spills could go unseen.
func ParsePtxasInfo(out string) ([]Function, error) {
	var fns []*Function
	byName := map[string]*Function{}
	get := func(name string) *Function {
		if f, ok := byName[name]; ok {
			return f
		}
		f := &Function{Name: name, Registers: -1, StackFrame: -1}
		byName[name] = f
		fns = append(fns, f)
		return f
	}
	var cur, props *Function
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := reEntry.FindStringSubmatch(line); m != nil {
			cur = get(m[1])
			cur.Entry, cur.Target = true, m[2]
			continue
		}
		if m := reFunc.FindStringSubmatch(line); m != nil {
			props = get(m[1])
			continue
		}
		if m := reProps.FindStringSubmatch(line); m != nil && props != nil {
			props.StackFrame, _ = strconv.Atoi(m[1])
			props.SpillStores, _ = strconv.Atoi(m[2])
			props.SpillLoads, _ = strconv.Atoi(m[3])
			props = nil
			continue
		}
		if m := reRegs.FindStringSubmatch(line); m != nil && cur != nil {
			cur.Registers, _ = strconv.Atoi(m[1])
			cur = nil
		}
	}
	var res []Function
	var errs []error
	for _, f := range fns {
		if f.StackFrame < 0 {
			errs = append(errs, fmt.Errorf("ptxas -v: no stack frame and spill line for %s", f.Name))
		}
		if f.Entry && f.Registers < 0 {
			errs = append(errs, fmt.Errorf("ptxas -v: no register count for %s", f.Name))
		}
		res = append(res, *f)
	}
	if len(res) == 0 {
		errs = append(errs, fmt.Errorf("ptxas -v named no function:\n%s", out))
	}
	return res, errors.Join(errs...)
}

// reEntryPTX finds the kernels a PTX text defines.
var reEntryPTX = regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)

// Entries returns the kernels (.visible .entry) PTX text defines, in order.
func Entries(ptx []byte) []string {
	var names []string
	for _, m := range reEntryPTX.FindAllSubmatch(ptx, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// reKernelCU finds the kernels a .cu source defines: extern "C" __global__.
var reKernelCU = regexp.MustCompile(`extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(`)

// Kernels returns the extern "C" __global__ kernels a CUDA source defines,
// in order.
func Kernels(src []byte) []string {
	var names []string
	for _, m := range reKernelCU.FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// Target returns the .target directive of PTX text ("sm_90").
func Target(ptx []byte) string {
	for _, line := range bytes.Split(ptx, []byte("\n")) {
		if f := strings.Fields(string(line)); len(f) >= 2 && f[0] == ".target" {
			return strings.TrimSuffix(f[1], ",")
		}
	}
	return ""
}
