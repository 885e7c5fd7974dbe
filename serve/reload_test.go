package serve

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/hone-rl/hone/internal/waitfor"
)

type answer struct{ model, content string }

// TestHotReloadUnderLoad keeps concurrent requests running while adapter
// steps 2 and 3 appear and a broken step 4 is pointed at. No request may
// fail, every response names its adapter, equal adapter + seed give equal
// output, and each step's output equals that of a fresh server started on
// that step alone.
func TestHotReloadUnderLoad(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 1)
	var log waitfor.Buffer
	ts := startServer(t, Options{Model: dir, Adapters: adir, PollInterval: 10 * time.Millisecond, MaxAdapters: 2, MaxBatch: 16,
		Log: slog.New(slog.NewTextHandler(&log, nil))}, nil)
	params := chatParams("r1", 99, 6)

	var mu sync.Mutex
	var answers []answer
	var errs []error
	seen := func(model string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(answers, func(a answer) bool { return a.model == model })
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	workers := 8
	if testing.Short() {
		workers = 4
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := ts.client.Chat.Completions.New(context.Background(), params)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					answers = append(answers, answer{resp.Model, resp.Choices[0].Message.Content})
				}
				mu.Unlock()
			}
		}()
	}
	waitFor := func(model string) {
		t.Helper()
		if !waitfor.Within(20*time.Second, func() bool { return seen(model) }) {
			close(stop)
			wg.Wait()
			t.Fatalf("no response from %s within 20 s", model)
		}
	}
	waitFor("r1@1")
	writeStep(t, dir, adir, "r1", 2)
	waitFor("r1@2")
	writeStep(t, dir, adir, "r1", 3)
	waitFor("r1@3")
	// A half-written step: the config is there, the weights are cut short.
	broken := filepath.Join(adir, "r1", stepName(4))
	if err := os.CopyFS(broken, os.DirFS(filepath.Join(adir, "r1", stepName(3)))); err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(broken, "adapter_model.safetensors")
	b, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	pointLatest(t, filepath.Join(adir, "r1"), stepName(4))
	refused := waitfor.Within(20*time.Second, func() bool {
		return strings.Contains(log.String(), "refusing adapter") && strings.Contains(log.String(), stepName(4))
	})
	mu.Lock()
	n3 := len(answers)
	mu.Unlock()
	more := refused && waitfor.Within(20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(answers) > n3+workers
	})
	close(stop)
	wg.Wait()
	if !refused {
		t.Fatalf("the broken step 4 was not refused within 20 s; log:\n%s", log.String())
	}
	if !more {
		t.Fatalf("no more than %d answers after step 4 was refused, want more than %d", len(answers)-n3, workers)
	}

	if len(errs) > 0 {
		t.Fatalf("%d requests failed, first: %v", len(errs), errs[0])
	}
	byModel := map[string]string{}
	for _, a := range answers {
		switch a.model {
		case "r1@1", "r1@2", "r1@3":
		default:
			t.Fatalf("response names %q", a.model)
		}
		if prev, ok := byModel[a.model]; ok && prev != a.content {
			t.Fatalf("%s answered %q and %q for the same seed", a.model, prev, a.content)
		}
		byModel[a.model] = a.content
	}
	if last := answers[len(answers)-1].model; last != "r1@3" {
		t.Fatalf("after the broken step 4 the last answer came from %s, want r1@3", last)
	}
	distinct := map[string]bool{}
	for _, c := range byModel {
		distinct[c] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("adapters do not change the output (%q); the test cannot tell steps apart", byModel)
	}
	page, err := ts.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"tiny", "r1", "r1@2", "r1@3"}) {
		t.Fatalf("models %v, want tiny r1 r1@2 r1@3 (max-adapters 2)", ids)
	}
	ts.close(t)

	// A fresh server on each step alone answers as the loaded step did.
	for n := 1; n <= 3; n++ {
		fresh := t.TempDir()
		writeStep(t, dir, fresh, "r1", n)
		fs := startServer(t, Options{Model: dir, Adapters: fresh}, nil)
		resp, err := fs.client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		want := "r1@" + string(rune('0'+n))
		if resp.Model != want || resp.Choices[0].Message.Content != byModel[want] {
			t.Fatalf("fresh server on step %d: %s %q, under load %q", n, resp.Model, resp.Choices[0].Message.Content, byModel[want])
		}
		fs.close(t)
	}
}

// TestAdapterPinnedRequest: "<run>@<step>" picks a kept step explicitly, and
// a request in flight across a swap keeps its adapter.
func TestAdapterPinnedRequest(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 1)
	ts := startServer(t, Options{Model: dir, Adapters: adir, PollInterval: 10 * time.Millisecond}, nil)
	ctx := context.Background()
	p := chatParams("r1@1", 4, 40)
	before, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	st := ts.client.Chat.Completions.NewStreaming(ctx, chatParams("r1", 4, 40))
	var acc openai.ChatCompletionAccumulator
	if !st.Next() {
		t.Fatal(st.Err())
	}
	acc.AddChunk(st.Current())
	writeStep(t, dir, adir, "r1", 2)
	waitfor.Until(t, 10*time.Second, "step 2 to load", func() bool { return slices.Contains(ts.s.reg.Names(), "r1@2") })
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Model != "r1@1" || acc.Choices[0].Message.Content != before.Choices[0].Message.Content {
		t.Fatalf("request in flight across the swap: %s %q, want r1@1 %q", acc.Model, acc.Choices[0].Message.Content, before.Choices[0].Message.Content)
	}
	again, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if again.Model != "r1@1" || again.Choices[0].Message.Content != before.Choices[0].Message.Content {
		t.Fatalf("pinned r1@1 after the swap: %s %q", again.Model, again.Choices[0].Message.Content)
	}
	latest, err := ts.client.Chat.Completions.New(ctx, chatParams("r1", 4, 40))
	if err != nil {
		t.Fatal(err)
	}
	if latest.Model != "r1@2" {
		t.Fatalf("r1 now answers as %s", latest.Model)
	}
}
