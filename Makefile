# Hone — build, test and benchmark. See README.md.
#
#   make build   every binary into bin/
#   make pipeline  the demo loop (see pipelines/RESULTS.md for what it shows)
#   make test    gofmt, go vet, the import-policy test, all tests (fuzz seed
#                corpora included; the concurrent packages' under -race), and
#                the kernel suite again without cgo (the pure-Go fallback)
#   make bench   long measurements; each prints its figures next to a reference

GO      ?= go
BIN     := bin
# Packages that run goroutines of their own; test-race runs their tests
# under -race.
RACE_PKGS := ./cmd/internal/cli/... ./format/tokenizer/... ./kernels/... ./serve/... ./cmd/hone-serve/... ./score/... ./collect/...
# Of those, the ones whose tests do the same work under -race as without
# it run under -race only: test-unit leaves them out, so that no test runs
# twice. These stay in both passes: the packages whose tests shrink under
# -race (raceEnabled: format/tokenizer, serve/constrain, kernels/cpu) and
# kernels/cuda and its fakes, whose toolchain tests (below) test-race skips
# and whose package is make test's longest, best started with the rest.
BOTH_PKGS := /format/tokenizer$$ /serve/constrain$$ /kernels/cpu$$ /kernels/cuda$$ /kernels/cuda/

# The CPU kernels call OpenBLAS through cgo (Debian: libopenblas-dev). Where
# it is missing, build pure Go (gonum's GEMM, several times slower) and say so,
# so that `make pipeline` still works on a bare machine. Tests need OpenBLAS:
# .ci/run installs it.
HAVE_OPENBLAS := $(shell printf '\043include <cblas.h>\nint main(void){return 0;}\n' | $${CC:-cc} -x c - -lopenblas -o /dev/null >/dev/null 2>&1 && echo yes)
BUILD_ENV := $(if $(HAVE_OPENBLAS),,CGO_ENABLED=0)

.PHONY: all build pipeline demo-name test fmt-check vet test-unit test-race test-nocgo bench

all: build

# make -j runs pipeline's prerequisites side by side: with pipeline among
# the goals, the build waits for the DEMO check (demo-name), so that a typo
# stops make before the build rather than after it.
build: | $(if $(filter pipeline,$(MAKECMDGOALS)),demo-name)
	@mkdir -p $(BIN)
	@[ -n "$(HAVE_OPENBLAS)" ] || echo "note: OpenBLAS not found (apt-get install libopenblas-dev); building the pure-Go kernels, which are slower"
	@for d in cmd/*/; do \
	  name=$$(basename $$d); \
	  [ "$$name" = internal ] && continue; \
	  ls $$d*.go >/dev/null 2>&1 || continue; \
	  echo "$(BUILD_ENV) go build -o $(BIN)/$$name ./$$d"; \
	  $(BUILD_ENV) $(GO) build -o $(BIN)/$$name ./$$d || exit 1; \
	done

# The demo loop on a tiny model, on this CPU: SFT warm-up from a scripted
# policy, then rounds of hone-serve → hone-collect → hone-score → hone-train,
# with a held-out evaluation before and after (pipelines/demo.mk, RESULTS.md).
pipeline: demo-name build
	$(MAKE) -f pipelines/$(or $(filter tictactoe,$(DEMO)),demo).mk

# DEMO names the demo: empty (the guess demo) or tictactoe; any other value
# (a typo) stops make pipeline before the build rather than running the
# guess demo in its place.
demo-name:
	@case "$(DEMO)" in ""|tictactoe) ;; *) echo "make pipeline: unknown DEMO=$(DEMO); want tictactoe, or none for the guess demo" >&2; exit 2;; esac

test: fmt-check vet test-unit test-race test-nocgo

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# The test passes run without go test's own vet step (-vet=off): its
# analyzers are a subset of what `make vet` ran over every package, tests
# included, and under -race and without cgo they would type-check every
# package again. kernels/cuda compiles its CPU-shim harnesses with g++ and
# ThreadSanitizer (3 to 5 minutes on 2 quiet cores); on a loaded machine it
# ran past go test's default limit of 10 minutes, hence 20.
test-unit:
	@race_only=$$($(GO) list $(RACE_PKGS) | grep -v $(foreach p,$(BOTH_PKGS),-e '$(p)')) && \
	pkgs=$$($(GO) list ./... | grep -vxF "$$race_only") && \
	echo "$(GO) test -count=1 -vet=off ./... except the $$(echo "$$race_only" | wc -l) packages test-race runs alone" && \
	$(GO) test -count=1 -vet=off -timeout 20m $$pkgs

# Tests whose work is another program: those that compile kernels/cuda's
# kernels on their own (nvcc for the committed PTX, g++ for the CPU shim's
# test binaries, which the Go test drives as another process) and check
# what those builds do, and those that run the device check's own scripts
# (gpucheck/run.sh on stub binaries, gpucheck/torch_bench.py in python3).
# Neither -race nor CGO_ENABLED changes them, so test-unit runs them once
# and test-race and test-nocgo skip them.
TOOLCHAIN_TESTS := ^(TestPTXCurrent|TestShim|TestKernelsOnCPUShim|TestAttention.*OnCPUShim|TestLoRABackwardMany(BF16|InputBF16)?Shim|TestLoRAForwardManyShim|TestMatmulBF16Shim|TestDinpRounderShim|TestAttentionGEMMKernelMutantsCaught|TestAttentionGEMMBrokenPlanCaught|TestAttentionBadSeqOffInBounds|TestShimRaceDetector|TestKernelsRaceFreeOnCPUShim|TestTSanCompileErrorIsNotSkipped|TestGPUCheckScript|TestTorchBench.*)$$

test-race:
	$(GO) test -count=1 -vet=off -race -skip '$(TOOLCHAIN_TESTS)' $(RACE_PKGS)

# Tests that train for minutes rather than seconds, kept out of make test:
# the bf16-compute GRPO reward curve against float32 on three seeds
# (train/internal/learntest TestBF16ComputeGRPO, about 3 min of CPU).
.PHONY: test-long
test-long:
	HONE_LONG_TESTS=1 $(GO) test -count=1 -timeout 30m -run 'BF16ComputeGRPO' -v ./train/internal/learntest
	# cuda.Backend on the emulated device (the .cu kernels on the CPU): the
	# other model goldens, and LoRA AdamW steps through train/trainer.
	HONE_LONG_TESTS=1 $(GO) test -count=1 -timeout 30m -run 'GoldenCUDAEmulated|StepCUDAEmulated' -v ./train/model ./train/trainer
	HONE_LONG_TESTS=1 $(GO) test -count=1 -timeout 10m -run 'DeviceCUDATrains' -v ./cmd/hone-train
	# the device check's hone-cmds flow (cmd/internal/cmdcheck) on the emulated device
	HONE_LONG_TESTS=1 $(GO) test -count=1 -timeout 20m -run 'CommandsEmulated' -v ./cmd/internal/cmdcheck

# Every package compiled for Windows, macOS and FreeBSD without cgo (make
# test checks macOS alone: cold, each system compiles every dependency
# again, minutes on 2 cores).
.PHONY: test-cross
test-cross:
	HONE_CROSS_GOOS="windows darwin freebsd" $(GO) test -count=1 -run '^TestCrossBuild$$' -v .

# The kernels must also pass their conformance suite as pure Go (gonum GEMM).
test-nocgo:
	CGO_ENABLED=0 $(GO) test -count=1 -vet=off -skip '$(TOOLCHAIN_TESTS)' ./kernels/...

# Each benchmark prints its figures next to its reference, measured in the
# same run under the same environment. They never set OPENBLAS_*; to measure
# with OpenBLAS's auto-detected kernels, run
#   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE make bench
bench: build
	@echo "BLAS environment: OPENBLAS_CORETYPE=$${OPENBLAS_CORETYPE-<unset>} OPENBLAS_L2_SIZE=$${OPENBLAS_L2_SIZE-<unset>} OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS-<unset>}"
	$(GO) run ./internal/bench/trajbench
	$(GO) run ./internal/bench/tokbench
	$(GO) run ./internal/bench/gemmbench
	@# Hone next to PyTorch: LoRA training step and decode, tiny and Qwen2.5-0.5B shapes
	@# (long: tens of minutes; --quick for a smoke run).
	OMP_WAIT_POLICY=PASSIVE $(GO) run ./train/internal/modelbench
	$(GO) test -run '^$$' -bench GRPOStep -benchtime 5x ./train/grpojob
	$(GO) test -run '^$$' -bench Collect -benchtime 2x ./collect/
	@# hone-serve over HTTP next to PyTorch's KV-cache decode (reference.py bench-decode) of the same
	@# shapes, reference.py's tiny and Qwen2.5-0.5B, at 1, 8 and 32 streams (a few minutes).
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	  $(BIN)/hone-train init-model --family qwen2 --hidden 256 --layers 4 --heads 8 --kv-heads 4 \
	    --intermediate 688 --vocab 4096 -o $$tmp/tiny && \
	  $(GO) run ./serve/internal/servebench --model $$tmp/tiny && \
	  $(BIN)/hone-train init-model --family qwen2 --hidden 896 --layers 24 --heads 14 --kv-heads 2 \
	    --intermediate 4864 --vocab 151936 --tie-embeddings --dtype BF16 -o $$tmp/q05 && \
	  $(GO) run ./serve/internal/servebench --model $$tmp/q05 --tokens 32

# The CUDA kernels (kernels/cuda/*.cu) compiled ahead of time to PTX for
# compute_80 and compute_90, into kernels/cuda/ptx/ (committed; embedded with
# go:embed). Needs nvcc: Debian's nvidia-cuda-toolkit (non-free), as .ci/run
# installs it. kernels/cuda's TestPTXCurrent checks the committed PTX is current.
.PHONY: ptx
ptx:
	$(GO) run ./kernels/cuda/internal/ptxgen -src kernels/cuda -out kernels/cuda/ptx

# The one-shot device check, built here for a machine with one NVIDIA GPU
# (no Go there): kernels/cuda's test binary (its *OnHardware tests run with
# HONE_CUDA_TEST=1), run.sh and torch_bench.py (the PyTorch reference rows,
# with the qwen2 model golden they check their decoder on) from
# kernels/cuda/gpucheck, into bin/gpu-check/.
# Copy the folder over and run `bash run.sh`; see run.sh for what it checks
# and what it does not yet. The dry run here checks the binary starts and
# holds the hardware tests, which skip without HONE_CUDA_TEST=1.
GPU_CHECK := $(BIN)/gpu-check
.PHONY: gpu-check
gpu-check:
	rm -rf $(GPU_CHECK) && mkdir -p $(GPU_CHECK)
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o $(GPU_CHECK)/cuda.test ./kernels/cuda
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o $(GPU_CHECK)/modelbench ./train/internal/modelbench
	$(GPU_CHECK)/modelbench worker train --shape tiny --batch 1 --seq 8 --steps 1 | grep -q '^BENCH '
	install -m 755 kernels/cuda/gpucheck/run.sh $(GPU_CHECK)/run.sh
	install -m 644 kernels/cuda/gpucheck/torch_bench.py kernels/cuda/gpucheck/README.md $(GPU_CHECK)/
	cp -R testdata/golden/model/qwen2 $(GPU_CHECK)/golden-qwen2
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o $(GPU_CHECK)/model.test ./train/model
	mkdir -p $(GPU_CHECK)/train/model $(GPU_CHECK)/testdata/golden/model
	cp -R testdata/golden/model/gemma3 testdata/golden/model/llama testdata/golden/model/qwen2 testdata/golden/model/qwen3 $(GPU_CHECK)/testdata/golden/model/
	cp -R testdata/golden/bf16compute $(GPU_CHECK)/testdata/golden/
	python3 $(GPU_CHECK)/torch_bench.py --help >/dev/null
	# The commands themselves (run.sh's hone-cmds step, cmd/internal/cmdcheck):
	# hone-train, hone-serve and the check's test binary, the demo's tiny
	# model (pipelines/demo.sh's init-model) and a scored file.
	mkdir -p $(GPU_CHECK)/cmdcheck
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o $(GPU_CHECK)/cmdcheck/ ./cmd/hone-train ./cmd/hone-serve
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o $(GPU_CHECK)/cmdcheck/cmdcheck.test ./cmd/internal/cmdcheck
	$(GPU_CHECK)/cmdcheck/hone-train init-model --family qwen3 --hidden 64 --layers 2 --heads 4 --init-std 0.3 --seed 1 -o $(GPU_CHECK)/cmdcheck/model
	HONE_CMDCHECK_WRITE=$(GPU_CHECK)/cmdcheck $(GPU_CHECK)/cmdcheck/cmdcheck.test -test.run '^TestWriteInputs$$' -test.v | grep -- '--- PASS: TestWriteInputs'
	env -u HONE_CMDCHECK_DIR $(GPU_CHECK)/cmdcheck/cmdcheck.test -test.run CommandsOnDevice -test.v | grep -- '--- SKIP: TestCommandsOnDevice'
	$(GPU_CHECK)/cmdcheck/hone-serve --help | grep -q -- '--device'
	@echo "$$(git rev-parse HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')" > $(GPU_CHECK)/COMMIT
	bash -n $(GPU_CHECK)/run.sh
	@list=$$($(GPU_CHECK)/cuda.test -test.list OnHardware) && echo "$$list" && \
	  echo "$$list" | grep -qx TestOnHardware && echo "$$list" | grep -qx TestRMSNormOnHardware && echo "$$list" | grep -qx TestKernelsOnHardware
	env -u HONE_CUDA_TEST $(GPU_CHECK)/cuda.test -test.run OnHardware -test.v | grep -- '--- SKIP'
	cd $(GPU_CHECK)/train/model && env -u HONE_CUDA_TEST ../../model.test -test.run GoldenCUDAOnHardware -test.v | grep -- '--- SKIP: TestGoldenCUDAOnHardware'
	# Every binary stripped and xz-compressed (28 MB in all instead of 98; run.sh unpacks them first).
	xz -9 -T0 $(GPU_CHECK)/cuda.test $(GPU_CHECK)/model.test $(GPU_CHECK)/modelbench $(GPU_CHECK)/cmdcheck/hone-train $(GPU_CHECK)/cmdcheck/hone-serve $(GPU_CHECK)/cmdcheck/cmdcheck.test
	python3 -c 'import lzma, sys; [sys.exit(n + ": no ELF binary inside") for n in sys.argv[1:] if lzma.open(n).read(4) != b"\x7fELF"]' $(GPU_CHECK)/*.xz $(GPU_CHECK)/cmdcheck/*.xz
	@echo "built $(GPU_CHECK): $$(ls $(GPU_CHECK) | tr '\n' ' '), $$(du -sh $(GPU_CHECK) | cut -f1)"

# The bf16 compute mode's CPU check (issue #23): cgo builds of cpu.test,
# gemmbench and modelbench, Debian's OpenBLAS and the libraries it needs,
# and kernels/cpu/testdata/bf16check/run.sh, into bin/cpu-bf16-check/ (and
# bin/cpu-bf16-check.tar.gz). Copy it to a machine with AVX512-BF16 / AMX
# and run `bash run.sh` there.
BF16_CHECK := $(BIN)/cpu-bf16-check
.PHONY: cpu-bf16-check
cpu-bf16-check:
	rm -rf $(BF16_CHECK) && mkdir -p $(BF16_CHECK)/lib
	CGO_ENABLED=1 $(GO) test -c -ldflags=-s -o $(BF16_CHECK)/cpu.test ./kernels/cpu
	CGO_ENABLED=1 $(GO) build -ldflags=-s -o $(BF16_CHECK)/gemmbench ./internal/bench/gemmbench
	CGO_ENABLED=1 $(GO) build -ldflags=-s -o $(BF16_CHECK)/modelbench ./train/internal/modelbench
	for l in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do \
	  p=$$(ldd $(BF16_CHECK)/cpu.test | awk -v l=$$l '$$1 == l { print $$3 }'); \
	  test -n "$$p" && cp -L "$$p" $(BF16_CHECK)/lib/$$l || exit 1; done
	install -m 755 kernels/cpu/testdata/bf16check/run.sh $(BF16_CHECK)/run.sh
	bash -n $(BF16_CHECK)/run.sh
	$(BF16_CHECK)/cpu.test -test.run 'PickBF16|BF16AMXDetect' >/dev/null
	@echo "$$(git rev-parse HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')" > $(BF16_CHECK)/COMMIT
	# The folder in one archive, 17 MB instead of 49 (OpenBLAS is most of it).
	tar -C $(BIN) -czf $(BF16_CHECK).tar.gz cpu-bf16-check
	@echo "built $(BF16_CHECK) and $(BF16_CHECK).tar.gz: $$(ls $(BF16_CHECK) | tr '\n' ' ')"
