package runfolder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestLocateCurrent: latest wins; without it the newest step folder; a run
// without steps is ErrNotExist; a bad latest is an error that says so.
func TestLocateCurrent(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "exp")
	if _, err := Locate(root, "exp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing run: %v, want ErrNotExist", err)
	}
	mkdir(t, run)
	if _, err := Locate(root, "exp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run without steps: %v, want ErrNotExist", err)
	}
	mkdir(t, run, "step-000001")
	mkdir(t, run, "step-000003")
	c, err := Locate(root, "exp")
	if err != nil || c.N != 3 || c.Dir != filepath.Join(run, "step-000003") {
		t.Fatalf("no latest: %+v, %v; want the newest folder, step 3", c, err)
	}
	if real, _ := filepath.EvalSymlinks(c.Dir); c.Real != real {
		t.Errorf("Real = %s, want %s", c.Real, real)
	}
	// What train writes is what serve finds, rolled back too.
	for _, n := range []int{3, 1} {
		if err := WritePointer(run, LatestName, n); err != nil {
			t.Fatal(err)
		}
		if c, err := Locate(root, "exp"); err != nil || c.N != n || c.Dir != filepath.Join(run, StepName(n)) {
			t.Fatalf("latest at step %d: %+v, %v", n, c, err)
		}
	}
	for text, says := range map[string]string{
		"../other/step-000001": "not a step-N folder",
		"step-x":               "not a step-N folder",
		"step-000009":          "names step-000009, which does not exist",
	} {
		writeText(t, filepath.Join(run, LatestName), text)
		_, err := Locate(root, "exp")
		if err == nil || errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "run exp") {
			t.Errorf("latest %q: %v; want an error naming the run and saying %q (and not ErrNotExist)", text, err, says)
		}
	}
	for _, bad := range []string{"", "..", "../x", "a/b"} {
		if _, err := Locate(root, bad); err == nil || errors.Is(err, os.ErrNotExist) {
			t.Errorf("Locate(%q) = %v; want a refused run name", bad, err)
		}
	}
}

// TestLocateContainment: links inside the adapters folder are followed;
// a run folder, step folder or adapter file that leads outside is refused
// with ErrOutside naming where it leads.
func TestLocateContainment(t *testing.T) {
	base := t.TempDir()
	realRoot := mkdir(t, base, "adapters")
	root := filepath.Join(base, "via-link") // the operator names the folder through a link
	symlink(t, realRoot, root)
	outside := mkdir(t, base, "outside")

	// A run folder linked to another inside the root serves.
	mkdir(t, realRoot, "store", "step-000002")
	writeText(t, filepath.Join(realRoot, "store", "step-000002", "adapter_model.safetensors"), "w")
	symlink(t, filepath.Join(realRoot, "store"), filepath.Join(realRoot, "inrun"))
	if c, err := Locate(root, "inrun"); err != nil || c.N != 2 || c.Real != filepath.Join(realRoot, "store", "step-000002") {
		t.Fatalf("run linked inside: %+v, %v", c, err)
	}

	for _, tc := range []struct {
		name  string
		setup func(run string)
		leads string
	}{
		{"run folder", func(run string) {
			mkdir(t, outside, "r1", "step-000001")
			symlink(t, filepath.Join(outside, "r1"), run)
		}, filepath.Join(outside, "r1")},
		{"step folder", func(run string) {
			mkdir(t, run, "step-000001")
			mkdir(t, outside, "s2")
			symlink(t, filepath.Join(outside, "s2"), filepath.Join(run, "step-000002"))
			writeText(t, filepath.Join(run, LatestName), "step-000002\n")
		}, filepath.Join(outside, "s2")},
		{"newest step folder", func(run string) {
			mkdir(t, outside, "s7")
			symlink(t, filepath.Join(outside, "s7"), filepath.Join(run, "step-000007"))
		}, filepath.Join(outside, "s7")},
		{"adapter file", func(run string) {
			step := mkdir(t, run, "step-000003")
			writeText(t, filepath.Join(outside, "w"), "weights")
			symlink(t, filepath.Join(outside, "w"), filepath.Join(step, "adapter_model.safetensors"))
		}, filepath.Join(outside, "w")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(realRoot, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.name != "run folder" {
				mkdir(t, run)
			}
			tc.setup(run)
			_, err := Locate(root, filepath.Base(run))
			if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), tc.leads) {
				t.Fatalf("Locate = %v; want ErrOutside naming %s", err, tc.leads)
			}
		})
	}
}
