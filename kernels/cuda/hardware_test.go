package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestOnHardware runs the GEMMs on a real CUDA device against kernels/ref.
// It runs only when HONE_CUDA_TEST=1 (CI and this repository's machines
// have no GPU): build the test binary here and run it there,
//
//	go test -c -o cuda.test ./kernels/cuda
//	HONE_CUDA_TEST=1 ./cuda.test -test.run OnHardware -test.v
//
// with HONE_LIBCUDA / HONE_LIBCUBLAS when the libraries are not on the
// loader's path. It has not been run yet.
func TestOnHardware(t *testing.T) {
	if os.Getenv("HONE_CUDA_TEST") != "1" {
		t.Skip("set HONE_CUDA_TEST=1 on a machine with a CUDA device")
	}
	dev, err := cuda.Open(cuda.Options{DriverLib: os.Getenv("HONE_LIBCUDA"), BLASLib: os.Getenv("HONE_LIBCUBLAS")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device: %s", dev)
	r := rand.New(rand.NewPCG(28, 5))
	for _, s := range [][4]int{{1, 1, 1, 1}, {1, 17, 5, 3}, {3, 33, 65, 129}, {2, 256, 896, 128}} {
		batch, M, N, K := s[0], s[1], s[2], s[3]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			name := fmt.Sprintf("batch=%d,M=%d,N=%d,K=%d,transA=%v,transB=%v", batch, M, N, K, tr[0], tr[1])
			a, b, c := randn(r, batch*M*K), randn(r, batch*K*N), randn(r, batch*M*N)
			want := append([]float32(nil), c...)
			ref.New().MatmulBatched(want, a, b, batch, M, N, K, tr[0], tr[1], 0.5)
			da, db, dc := upload(t, dev, a), upload(t, dev, b), upload(t, dev, c)
			if batch == 1 {
				err = dev.Matmul(dc, da, db, M, N, K, tr[0], tr[1], 0.5)
			} else {
				err = dev.MatmulBatched(dc, da, db, batch, M, N, K, tr[0], tr[1], 0.5)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			near(t, name, download(t, dc), want, kerneltest.F32Tol)
			for _, x := range []*cuda.Buffer{da, db, dc} {
				if err := x.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
}
