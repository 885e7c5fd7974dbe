// Command ptxgen compiles kernels/cuda's *.cu to PTX for every architecture
// of ptxbuild.Arches (`make ptx`); the PTX is committed and embedded.
//
//	go run ./kernels/cuda/internal/ptxgen -src kernels/cuda -out kernels/cuda/ptx
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/hone-rl/hone/kernels/cuda/internal/ptxbuild"
)

func main() {
	src := flag.String("src", "kernels/cuda", "directory of the *.cu sources")
	out := flag.String("out", "kernels/cuda/ptx", "directory the PTX is written to")
	nvcc := flag.String("nvcc", "", "nvcc to use (default: nvcc on $PATH, else /usr/lib/nvidia-cuda-toolkit/bin/nvcc, /usr/local/cuda/bin/nvcc)")
	ccbin := flag.String("ccbin", "", "nvcc's host C++ compiler (default: g++-11, else g++-12)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *src, *out, *nvcc, *ccbin); err != nil {
		fmt.Fprintln(os.Stderr, "ptxgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, src, out, nvcc, ccbin string) error {
	tk, err := ptxbuild.FindToolkit(nvcc, ccbin)
	if err != nil {
		return err
	}
	fmt.Printf("nvcc %s (host compiler %s)\n", tk.NVCC, tk.HostCXX)
	files, err := tk.Generate(ctx, src, out)
	for _, f := range files {
		fmt.Println("wrote", f)
	}
	return err
}
