package cpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBF16AMXEmulated checks the AMX bfloat16 GEMM's C — its blocking,
// packing, padding and edge handling — on any CPU: it builds gemm_bf16.go's
// C with gcc, the tile instructions replaced by an emulated tile unit
// (testdata/amxemu/harness.c, which says what it checks), and runs it. The
// instructions themselves are checked on AMX hardware by
// TestBF16GEMMBlocks/kind=amx. Needs gcc (a failure under CI=true, else a
// skip).
func TestBF16AMXEmulated(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("gcc, which builds the emulated AMX check: %v", err)
		}
		t.Skipf("no gcc to build the emulated AMX check: %v", err)
	}
	src, err := os.ReadFile("gemm_bf16.go")
	if err != nil {
		t.Fatal(err)
	}
	harness, err := os.ReadFile(filepath.Join("testdata", "amxemu", "harness.c"))
	if err != nil {
		t.Fatal(err)
	}
	cSrc := string(src)
	begin, end := strings.Index(cSrc, "/*\n#cgo"), strings.Index(cSrc, "*/\nimport \"C\"")
	if begin < 0 || end < begin {
		t.Fatal("gemm_bf16.go: no cgo preamble found")
	}
	cSrc = regexp.MustCompile(`(?m)^#cgo .*$`).ReplaceAllString(cSrc[begin+2:end], "")
	for _, r := range []struct{ pattern, with string }{
		{`(?m)^#define AMX_LOAD\(.*$`, "#define AMX_LOAD(t, p, stride) emu_load(t, (const void *)(p), (long)(stride))"},
		{`(?m)^#define AMX_STORE\(.*$`, "#define AMX_STORE(t, p, stride) emu_store(t, (void *)(p), (long)(stride))"},
		{`(?m)^#define AMX_ZERO\(.*$`, "#define AMX_ZERO(t) memset(emu_t[t], 0, sizeof emu_t[t])"},
		{`(?m)^#define AMX_DP\(.*$`, "#define AMX_DP(c, a, b) emu_dp(c, a, b)"},
		{`(?m)^\s*__asm__ volatile\("ldtilecfg.*$`, "\temu_cfg++;"},
		{`(?m)^static void amx_end\(void\) \{ __asm__ volatile\("tilerelease".*$`, "static void amx_end(void) { emu_rel++; }"},
	} {
		re := regexp.MustCompile(r.pattern)
		if n := len(re.FindAllStringIndex(cSrc, -1)); n != 1 {
			t.Fatalf("gemm_bf16.go: %d lines match %s, want 1 (update the emulation's substitutions)", n, r.pattern)
		}
		cSrc = re.ReplaceAllLiteralString(cSrc, r.with)
	}
	if m := regexp.MustCompile(`tileloadd|tilestored|tilezero|tdpbf16ps|ldtilecfg|tilerelease`).FindString(stripCComments(cSrc)); m != "" {
		t.Fatalf("gemm_bf16.go: %s is left in the emulated build", m)
	}
	const mark = "HONE_GEMM_BF16_C"
	if strings.Count(string(harness), mark) != 1 {
		t.Fatalf("harness.c: want one line %s", mark)
	}
	dir := t.TempDir()
	cFile, bin := filepath.Join(dir, "amxemu.c"), filepath.Join(dir, "amxemu")
	if err := os.WriteFile(cFile, []byte(strings.Replace(string(harness), mark, cSrc, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O2", "-o", bin, cFile, "-lm").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), " bad 0 ") {
		t.Fatalf("the emulated AMX GEMM disagrees with the portable one: %v", err)
	}
}

// stripCComments drops // comments, so that a comment naming an instruction
// does not count as its use.
func stripCComments(s string) string {
	return regexp.MustCompile(`//.*`).ReplaceAllString(s, "")
}
