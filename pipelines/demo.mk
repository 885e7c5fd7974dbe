# make -f pipelines/demo.mk — the demo loop (see pipelines/demo.sh).
# Needs the binaries in bin/ (make build) and jq. Every run starts fresh in
# OUT (default out/demo). Knobs pass through: SEED, ROUNDS, EVAL_EPISODES,
# EVAL_SPLIT (test for the reported numbers, val for choosing settings).

.PHONY: demo
demo:
	./pipelines/demo.sh
