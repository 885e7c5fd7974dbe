// Command servebench measures hone-serve end to end over HTTP: time to first
// token, single-stream decode tokens/s, and aggregate tokens/s with 1, 8 and
// 32 concurrent streams, on a model folder (write one with
// `hone-train init-model`; the Qwen2.5-0.5B shape is --hidden 896 --layers 24
// --heads 14 --kv-heads 2 --intermediate 4864 --vocab 151936 --tie-embeddings).
//
//	go run ./serve/internal/servebench --model /tmp/tiny --streams 1,8,32 --tokens 64
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/serve"
)

type options struct {
	model   string
	streams []int
	tokens  int
	prompt  int
	threads int
	batch   int
}

func main() {
	var o options
	fs := pflag.NewFlagSet("servebench", pflag.ContinueOnError)
	fs.StringVar(&o.model, "model", "", "model folder (required)")
	fs.IntSliceVar(&o.streams, "streams", []int{1, 8, 32}, "concurrent streams per measurement")
	fs.IntVar(&o.tokens, "tokens", 64, "tokens generated per stream")
	fs.IntVar(&o.prompt, "prompt", 32, "prompt tokens per stream")
	fs.IntVar(&o.threads, "threads", 0, "CPU workers (0: all cores)")
	fs.IntVar(&o.batch, "max-batch", 32, "server batch size")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "servebench: hone-serve TTFT and decode throughput over HTTP\n\n"+
			"example: hone-train init-model -o /tmp/tiny && go run ./serve/internal/servebench --model /tmp/tiny\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if o.model == "" {
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

type streamResult struct {
	ttft, total time.Duration
	tokens      int
}

func run(ctx context.Context, o options, w io.Writer) error {
	be, err := cpu.New(cpu.Options{Workers: o.threads})
	if err != nil {
		return err
	}
	defer be.Close()
	so := serve.Options{Model: o.model, MaxBatch: o.batch, MaxQueue: 1024, KVCacheBytes: 0, MaxTokens: o.tokens,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := serve.NewServer(so, be)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx, ln) }()
	defer func() { cancel(); <-done }()
	url := "http://" + ln.Addr().String() + "/v1/completions"
	vocab := s.Engine().Model().Config.Vocab

	fmt.Fprintf(w, "servebench: %s, backend %s, %d prompt + %d generated tokens per stream\n", o.model, be.Name(), o.prompt, o.tokens)
	fmt.Fprintf(w, "%-8s %12s %12s %18s %18s\n", "streams", "ttft_p50_ms", "ttft_max_ms", "decode_tok/s/strm", "aggregate_tok/s")
	// One warm-up stream.
	if _, err := stream(ctx, url, promptIDs(0, o.prompt, vocab), o.tokens); err != nil {
		return err
	}
	var single, last float64
	for _, n := range o.streams {
		res := make([]streamResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i], errs[i] = stream(ctx, url, promptIDs(uint64(i+1), o.prompt, vocab), o.tokens)
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		if err := errors.Join(errs...); err != nil {
			return err
		}
		var ttfts []float64
		total, decode := 0, 0.0
		for _, r := range res {
			ttfts = append(ttfts, r.ttft.Seconds()*1000)
			total += r.tokens
			if r.tokens > 1 {
				decode += float64(r.tokens-1) / (r.total - r.ttft).Seconds()
			}
		}
		sort.Float64s(ttfts)
		agg := float64(total) / wall.Seconds()
		if n == 1 {
			single = agg
		}
		last = agg
		fmt.Fprintf(w, "%-8d %12.1f %12.1f %18.1f %18.1f\n", n, ttfts[len(ttfts)/2], ttfts[len(ttfts)-1], decode/float64(n), agg)
	}
	if single > 0 {
		fmt.Fprintf(w, "aggregate at %d streams = %.1fx the single stream\n", o.streams[len(o.streams)-1], last/single)
	}
	return nil
}

func promptIDs(seed uint64, n, vocab int) []int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(min(vocab, 256))) // byte tokens exist in every vocabulary we write
	}
	return ids
}

// stream runs one streamed completion and times its first and last token.
func stream(ctx context.Context, url string, prompt []int32, tokens int) (streamResult, error) {
	body, _ := json.Marshal(map[string]any{
		"prompt": prompt, "max_tokens": tokens, "stream": true, "ignore_eos": true, "return_token_ids": true,
		"temperature": 1, "seed": 1,
	})
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return streamResult{}, err
	}
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return streamResult{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	var r streamResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				TokenIDs []int32 `json:"token_ids"`
			} `json:"choices"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return r, err
		}
		if chunk.Error != nil {
			return r, errors.New(chunk.Error.Message)
		}
		for _, c := range chunk.Choices {
			if len(c.TokenIDs) > 0 && r.tokens == 0 {
				r.ttft = time.Since(t0)
			}
			r.tokens += len(c.TokenIDs)
		}
	}
	r.total = time.Since(t0)
	return r, sc.Err()
}
