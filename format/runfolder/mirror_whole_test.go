package runfolder

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
)

// stepFiles lists the files of a local step folder, sorted.
func stepFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// A Pull that lists the store while a publisher prunes a step, some of
// its objects deleted already, must not copy the rest as the step: before,
// it renamed a step folder holding part of the step into place (in
// hone-serve's adapters cache, a fresh trainer's --out-cache), where it
// stayed as the step. The pull runs inside the publisher's DELETE of the
// step's second object, so the first is gone when it lists.
func TestPullDuringPruneCopiesNoPartStep(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors"}
	writeStepFiles(t, train, 1, files...)
	writeStepFiles(t, train, 2, files...)
	if err := WritePointer(train, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	var (
		once     sync.Once
		store    string
		pulled   []int
		pullErr  error
		deletes  int
		fresh    = filepath.Join(dir, "fresh", "r")
		leftOut  = map[int]error{}
		stepOne  = "/" + StepName(1) + "/"
		inDelete bool
	)
	url := hookedS3Requests(t, "bkt", func(method, p string) {
		if method != http.MethodDelete || !strings.Contains(p, stepOne) || strings.Contains(p, "/.") {
			return
		}
		deletes++
		if deletes == 2 {
			once.Do(func() {
				inDelete = true
				pulled, pullErr = Pull(ctx, store, fresh, PullOptions{LeftOut: func(n int, why error) { leftOut[n] = why }})
			})
		}
	})
	store = url("adapters/r")
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatal(err)
	}
	// The trainer saves step 3 and prunes step 1 (--keep-last 2).
	writeStepFiles(t, train, 3, files...)
	if err := WritePointer(train, LatestName, 3); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(train, StepName(1))); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatal(err)
	}
	if !inDelete {
		t.Fatalf("the publish deleted %d of step 1's files; the pull never ran", deletes)
	}
	if pullErr != nil {
		t.Fatalf("pull during the prune: %v", pullErr)
	}
	if !slices.Equal(pulled, []int{2, 3}) {
		t.Errorf("the pull during the prune copied steps %v, want [2 3]", pulled)
	}
	// Left out with its reason, naming the file gone.
	if why := leftOut[1]; !errors.Is(why, ErrIncompleteStep) || !strings.Contains(fmt.Sprint(why), files[0]) {
		t.Errorf("step 1 left out with %v, want ErrIncompleteStep naming %s", why, files[0])
	}
	for _, n := range []int{1, 2, 3} {
		d := filepath.Join(fresh, StepName(n))
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if got := stepFiles(t, d); !slices.Equal(got, files) {
			t.Errorf("the pull renamed %s into place holding %q, want all of %q", StepName(n), got, files)
		}
	}
}

// A step latest names that lacks a file of its own (a folder edited by
// hand, a broken copy) is an error naming the step and the file; before,
// Pull copied what was there and moved the local latest to it.
func TestPullLatestStepIncompleteIsAnError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	train := filepath.Join(dir, "train", "r")
	files := []string{"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors"}
	writeStepFiles(t, train, 1, files...)
	writeStepFiles(t, train, 2, files...)
	if err := WritePointer(train, LatestName, 2); err != nil {
		t.Fatal(err)
	}
	url := hookedS3Requests(t, "bkt", func(string, string) {})
	store := url("adapters/r")
	if _, err := Publish(ctx, train, store); err != nil {
		t.Fatal(err)
	}
	if err := fileset.Remove(ctx, fileset.Join(store, StepName(2), files[1])); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh", "r")
	got, err := Pull(ctx, store, fresh, PullOptions{})
	if err == nil {
		t.Fatalf("pulled steps %v from a store whose latest step lacks %s; want an error", got, files[1])
	}
	for _, want := range []string{StepName(2), files[1]} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(fresh, StepName(2))); err == nil {
		t.Errorf("the incomplete %s was renamed into place (holding %q)", StepName(2), stepFiles(t, filepath.Join(fresh, StepName(2))))
	}
	if l, ok, _ := ReadPointer(fresh, LatestName); ok {
		t.Errorf("the local latest moved to %s", l.Name)
	}
	// Made whole again, the next pull copies it.
	if err := fileset.WriteFile(ctx, fileset.Join(store, StepName(2), files[1]), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := Pull(ctx, store, fresh, PullOptions{}); err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Errorf("the pull after the step is whole again copied %v (%v), want [1 2]", got, err)
	}
}
