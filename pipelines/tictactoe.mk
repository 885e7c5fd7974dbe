# make -f pipelines/tictactoe.mk — the tic-tac-toe demo (pipelines/tictactoe.sh,
# issue #26): a tiny model warmed up on a teacher that never blocks, then
# GRPO against an opponent that punishes every missed block. `make pipeline
# DEMO=tictactoe` runs it. Knobs as in pipelines/demo.mk (SEED, OUT,
# ROUNDS, SFT_STEPS, EVAL_EPISODES, EVAL_SPLIT: tune on val, never test).
#
#   tictactoe        one run, OUT=out/tictactoe
#   tictactoe-seeds  seeds 1 and 2 into out/tictactoe-seed1, -seed2, then
#                    check the issue's targets in each summary: held-out
#                    win-or-draw of RL over the warm-up (the teacher's
#                    imitation) ≥ MIN_T1 at T=1 and ≥ MIN_GREEDY greedy;
#                    SKIP_RUN=1 only checks the summaries already there

OUT        ?= out/tictactoe
SEEDS      ?= 1 2
MIN_T1     ?= 0.25
MIN_GREEDY ?= 0.15

.PHONY: tictactoe tictactoe-seeds

# OUT reaches the script through the environment, as it is: a recipe's
# OUT=$(OUT) would split a name holding a blank.
export OUT

tictactoe:
	./pipelines/tictactoe.sh

tictactoe-seeds:
	@[ -n "$(SKIP_RUN)" ] || for s in $(SEEDS); do OUT=out/tictactoe-seed$$s SEED=$$s ./pipelines/tictactoe.sh || exit 1; done
	@for s in $(SEEDS); do \
	  jq -e --argjson t1 $(MIN_T1) --argjson g $(MIN_GREEDY) \
	    '(.rl_t1 - .teacher_t1) >= $$t1 and (.rl_greedy - .teacher_greedy) >= $$g' out/tictactoe-seed$$s/summary.json >/dev/null \
	    || { echo "seed $$s: RL did not beat the teacher by $(MIN_T1) at T=1 and $(MIN_GREEDY) greedy"; exit 1; }; \
	done; echo "every seed: RL beat the teacher by at least $(MIN_T1) at T=1 and $(MIN_GREEDY) greedy"
