# make -f pipelines/demo.mk — the demo loop (pipelines/demo.sh): a tiny random
# model warmed up by SFT on a scripted policy, then GRPO rounds through
# hone-serve (hot reload) → hone-collect → hone-score → hone-train grpo, with
# held-out evaluations before and after.
#
# Needs bin/ (make build), jq, curl, python3 (for a free port) and column. Every run
# starts fresh: OUT is removed first (only if a demo run wrote it). Knobs pass through the environment:
#   SEED, OUT, ROUNDS, SFT_STEPS, EVAL_EPISODES, EVAL_SPLIT (test: the
#   reported numbers; val: for choosing settings — never tune on test), and
#   the job's ENV, ENV_OPTS, SCORERS, EVAL_METRIC, EVAL_COLUMNS (see the top
#   of pipelines/demo.sh). demo-seeds checks the default job's summaries.
#
#   demo          one run, OUT=out/demo
#   demo-seeds    seeds 1 and 2 into out/demo-seed1, out/demo-seed2, then
#                 check that the T=1 success rose by ≥ 20 points in each,
#                 both over the base model and over the warm-up (GRPO's own
#                 share); SKIP_RUN=1 only checks the summaries already there

OUT   ?= out/demo
SEEDS ?= 1 2
MIN_GAIN ?= 0.20

.PHONY: demo demo-seeds

# OUT reaches the script through the environment, as it is: a recipe's
# OUT=$(OUT) would split a name holding a blank.
export OUT

demo:
	./pipelines/demo.sh

# GAIN_CHECK holds for a summary.json whose T=1 success rose by MIN_GAIN over
# the base model and over the warm-up.
GAIN_CHECK = .results as $$r | def s(m; t): ($$r[] | select(.model == m and .temperature == t) | .success); (s("rl"; 1) - s("base"; 1)) >= $$min and (s("rl"; 1) - s("warmup"; 1)) >= $$min

demo-seeds:
	@[ -n "$(SKIP_RUN)" ] || for s in $(SEEDS); do OUT=out/demo-seed$$s SEED=$$s ./pipelines/demo.sh || exit 1; done
	@for s in $(SEEDS); do \
	  jq -e --argjson min $(MIN_GAIN) '$(GAIN_CHECK)' out/demo-seed$$s/summary.json >/dev/null \
	    || { echo "seed $$s: T=1 success did not rise by $(MIN_GAIN) over the base model and over the warm-up"; exit 1; }; \
	done; echo "every seed rose by at least $(MIN_GAIN) at T=1, over the base model and over the warm-up"
