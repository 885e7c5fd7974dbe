package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/testbin"
	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestDeviceCUDAServes runs the hone-serve binary with --device cuda on the
// emulating CUDA libraries of kernels/cuda/cudafake (HONE_LIBCUDA,
// HONE_LIBCUBLAS: the real loader, the embedded PTX handed to the driver,
// the .cu kernels launched through cuLaunchKernel and run on the CPU, the
// GEMMs in the C stand-in for cuBLAS) and asks it for one greedy chat
// completion through the openai-go client: the text and the token count
// are those hone-serve --device cpu answers, and so are those of --device
// cuda --cuda-sync edges (the stream-ordered mode, on the emulating
// driver's deferred mode, HONE_FAKE_CUDA_DEFERRED). Without a C or C++ compiler
// the test is skipped, unless CI is set.
func TestDeviceCUDAServes(t *testing.T) {
	libs := testbin.EmulatedCUDA(t, "../../kernels/cuda")
	t.Setenv("HONE_LIBCUDA", libs.Driver) // hone-serve's environment: StartProcess passes this one on
	t.Setenv("HONE_LIBCUBLAS", libs.BLAS)
	answer := func(device string, extra ...string) *openai.ChatCompletion {
		t.Helper()
		start := time.Now()
		args := append([]string{"--model", "../../serve/testdata/tiny", "--port", "0", "--threads", "1", "--device", device}, extra...)
		addr := openaitest.StartProcess(t, binary, args...)
		client := openai.NewClient(option.WithBaseURL("http://"+addr+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
		c, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:       "tiny",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
			MaxTokens:   openai.Int(3),
			Temperature: openai.Float(0),
		})
		if err != nil {
			t.Fatalf("--device %s: %v", device, err)
		}
		if len(c.Choices) != 1 {
			t.Fatalf("--device %s: %d choices", device, len(c.Choices))
		}
		t.Logf("--device %s: %q (%d tokens, %s) in %v", device, c.Choices[0].Message.Content, c.Usage.CompletionTokens,
			c.Choices[0].FinishReason, time.Since(start).Round(time.Millisecond))
		return c
	}
	want, got := answer("cpu"), answer("cuda")
	if got.Choices[0].Message.Content != want.Choices[0].Message.Content || got.Usage.CompletionTokens != want.Usage.CompletionTokens ||
		got.Choices[0].FinishReason != want.Choices[0].FinishReason {
		t.Errorf("--device cuda answered %q (%d tokens, %s), --device cpu %q (%d tokens, %s)",
			got.Choices[0].Message.Content, got.Usage.CompletionTokens, got.Choices[0].FinishReason,
			want.Choices[0].Message.Content, want.Usage.CompletionTokens, want.Choices[0].FinishReason)
	}
	// The edges run on the emulated device's deferred mode: launches and
	// GEMMs run only at the driver's synchronization points, so a wait the
	// backend leaves out changes the answer.
	t.Setenv("HONE_FAKE_CUDA_DEFERRED", libs.Driver)
	edges := answer("cuda", "--cuda-sync", "edges")
	t.Setenv("HONE_FAKE_CUDA_DEFERRED", "")
	if edges.Choices[0].Message.Content != got.Choices[0].Message.Content || edges.Usage.CompletionTokens != got.Usage.CompletionTokens {
		t.Errorf("--device cuda --cuda-sync edges answered %q (%d tokens), --device cuda %q (%d tokens)",
			edges.Choices[0].Message.Content, edges.Usage.CompletionTokens, got.Choices[0].Message.Content, got.Usage.CompletionTokens)
	}
	// --cuda-gemm cublaslt: the bf16 precision's linear GEMMs through the
	// stand-in cuBLASLt, which computes the bits of its cublasGemmEx: the
	// answer of the default cuBLAS. Without cuBLASLt hone-serve exits 1
	// naming it, without serving.
	t.Setenv("HONE_LIBCUBLASLT", libs.BLASLt)
	bf16 := []string{"--dtype", "bfloat16", "--compute", "bf16"}
	blas, lt := answer("cuda", bf16...), answer("cuda", append(bf16, "--cuda-gemm", "cublaslt")...)
	if lt.Choices[0].Message.Content != blas.Choices[0].Message.Content || lt.Usage.CompletionTokens != blas.Usage.CompletionTokens {
		t.Errorf("--compute bf16 --cuda-gemm cublaslt answered %q (%d tokens), on cuBLAS %q (%d tokens)",
			lt.Choices[0].Message.Content, lt.Usage.CompletionTokens, blas.Choices[0].Message.Content, blas.Usage.CompletionTokens)
	}
	nowhere := filepath.Join(t.TempDir(), "libcublasLt.so.13")
	cmd := exec.Command(binary, append([]string{"--model", "../../serve/testdata/tiny", "--port", "0", "--threads", "1", "--device", "cuda", "--cuda-gemm", "cublaslt"}, bf16...)...)
	cmd.Env = append(os.Environ(), "HONE_LIBCUBLASLT="+nowhere)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	says := "no cuBLASLt library (tried " + nowhere + ")"
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), says) || strings.Contains(stderr.String(), "listening") {
		t.Errorf("--cuda-gemm cublaslt without cuBLASLt: %v, stderr %q; want exit 1 saying %q, without serving", err, stderr.String(), says)
	}
}
