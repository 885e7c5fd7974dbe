package runfolder

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// entries lists a folder's entry names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestPointerRoundTrip(t *testing.T) {
	run := filepath.Join(t.TempDir(), "exp") // made by the first write
	if s, ok, err := ReadPointer(run, LatestName); ok || err != nil {
		t.Fatalf("fresh run: %+v %v %v", s, ok, err)
	}
	for _, n := range []int{1, 42, 7} { // rolled back too
		if err := WritePointer(run, LatestName, n); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(run, LatestName))
		if err != nil || string(b) != StepName(n)+"\n" {
			t.Fatalf("latest holds %q, %v; want %q", b, err, StepName(n)+"\n")
		}
		if s, ok, err := ReadPointer(run, LatestName); !ok || err != nil || s != (Step{N: n, Name: StepName(n)}) {
			t.Fatalf("ReadPointer after writing %d: %+v %v %v", n, s, ok, err)
		}
	}
	if got := entries(t, run); !slices.Equal(got, []string{LatestName}) {
		t.Errorf("run folder holds %v after the writes; want latest alone (no temporary file)", got)
	}
	if st, err := os.Stat(filepath.Join(run, LatestName)); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("latest mode %v, %v; want 0644", st.Mode(), err)
	}
}

func TestReadPointerContent(t *testing.T) {
	run := t.TempDir()
	path := filepath.Join(run, LatestName)
	for text, want := range map[string]Step{
		"step-000005":        {5, "step-000005"},
		"  step-000005 \n\n": {5, "step-000005"},
		"step-5\n":           {5, "step-5"}, // named as written: the folder is step-5
	} {
		writeText(t, path, text)
		if s, ok, err := ReadPointer(run, LatestName); !ok || err != nil || s != want {
			t.Errorf("latest %q: %+v %v %v; want %+v", text, s, ok, err, want)
		}
	}
	for _, text := range []string{"", "\n", "../other/step-000001", "step-x", "5", "step-000005/adapter_model.safetensors", "step-1\nstep-2"} {
		writeText(t, path, text)
		_, ok, err := ReadPointer(run, LatestName)
		if ok || err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a step-N folder") {
			t.Errorf("latest %q: ok %v, err %v; want an error naming %s", text, ok, err, path)
		}
	}
}

// TestWriteFileFailureLeavesNoTemp: a write that cannot be renamed into
// place fails naming the path and leaves nothing behind.
func TestWriteFileFailureLeavesNoTemp(t *testing.T) {
	run := t.TempDir()
	mkdir(t, run, LatestName, "x") // latest is a non-empty folder
	err := WritePointer(run, LatestName, 3)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(run, LatestName)) {
		t.Fatalf("WritePointer over a folder: %v", err)
	}
	if got := entries(t, run); !slices.Equal(got, []string{LatestName}) {
		t.Errorf("after a failed write the run folder holds %v", got)
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".latest.tmp-123": true, ".step-000005.tmp-9": true, ".manifest.json.tmp-1": true,
		"latest": false, "step-000005": false, ".hidden": false, "x.tmp-1": false,
	} {
		if IsTemp(name) != want {
			t.Errorf("IsTemp(%q) = %v", name, !want)
		}
	}
	// What WriteFile leaves when killed between create and rename is a temp.
	dir := t.TempDir()
	f, err := os.CreateTemp(dir, "."+LatestName+tempMark+"*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !IsTemp(filepath.Base(f.Name())) {
		t.Errorf("IsTemp(%q) = false for WriteFile's own temporary name", filepath.Base(f.Name()))
	}
}

func TestStepsAndNewest(t *testing.T) {
	root := t.TempDir()
	run := mkdir(t, root, "exp")
	if _, err := Newest(run); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Newest of a run without steps: %v, want ErrNotExist", err)
	}
	if _, err := Newest(filepath.Join(root, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Newest of a missing run folder: %v, want ErrNotExist", err)
	}
	mkdir(t, run, "step-000001")
	mkdir(t, run, "step-000003")
	mkdir(t, run, "step-3")           // a second name of step 3, made by hand
	mkdir(t, root, "elsewhere", "s5") // reached through a link
	if err := os.Symlink(filepath.Join(root, "elsewhere", "s5"), filepath.Join(run, "step-000005")); err != nil {
		t.Fatal(err)
	}
	writeText(t, filepath.Join(run, "step-000009"), "a file, not a step folder")
	if err := os.Symlink(filepath.Join(root, "gone"), filepath.Join(run, "step-000008")); err != nil {
		t.Fatal(err) // a dangling link is no folder
	}
	mkdir(t, run, ".step-000010.tmp-1")
	mkdir(t, run, "step-x")
	writeText(t, filepath.Join(run, LatestName), "step-000001\n")
	steps, err := Steps(run)
	want := []Step{{1, "step-000001"}, {3, "step-000003"}, {3, "step-3"}, {5, "step-000005"}}
	if err != nil || !slices.Equal(steps, want) {
		t.Fatalf("Steps = %v, %v; want %v", steps, err, want)
	}
	if s, err := Newest(run); err != nil || s != (Step{5, "step-000005"}) {
		t.Errorf("Newest = %+v, %v; want step-000005", s, err)
	}
	os.Remove(filepath.Join(run, "step-000005"))
	if s, err := Newest(run); err != nil || s != (Step{3, "step-000003"}) {
		t.Errorf("Newest of two names of step 3 = %+v, %v; want the first by name", s, err)
	}
}

func TestRuns(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"b", "a", "bad name", ".hidden", "x..y"} {
		mkdir(t, root, d)
	}
	writeText(t, filepath.Join(root, "file"), "")
	mkdir(t, root, "target")
	if err := os.Symlink(filepath.Join(root, "target"), filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	got, err := Runs(root)
	if want := []string{"a", "b", "linked", "target"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Runs = %v, %v; want %v", got, err, want)
	}
	if _, err := Runs(filepath.Join(root, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Runs of a missing folder: %v", err)
	}
}
