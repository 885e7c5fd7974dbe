#!/usr/bin/env bash
# The demo loop: a tiny random model learns guess-the-number on a CPU.
#
#   1. init-model       a random qwen3-style model (byte-level tokenizer)
#   2. warm-up data     the environment's scripted "mix" policy: bisection
#                       in 30% of episodes, random-in-range otherwise
#   3. SFT warm-up      a LoRA adapter that imitates it (run "warmup")
#   4. hone-serve       in the background, hot-reloading OUT/adapters
#   5. evaluation       base and warm-up on held-out test scenarios
#   6. GRPO rounds      collect (16 secrets x 8 tries, T=1) -> score -> one
#                       GRPO step (run "rl"); the server picks up each step
#   7. evaluation       after GRPO, then a before/after table and
#                       OUT/summary.json
#
# Everything lands under OUT (default out/demo); a run starts fresh (the
# folder is removed first). Environment knobs: BIN, OUT, SEED, ROUNDS,
# EVAL_EPISODES, SFT_STEPS, WARMUP_POLICY, REWARD, RL_LR, THREADS. The
# server is always stopped on exit.
set -euo pipefail

BIN=${BIN:-bin}
OUT=${OUT:-out/demo}
SEED=${SEED:-1}
N=${N:-32}                       # secrets in 1..N
TURNS=${TURNS:-5}                # guesses per episode
WARMUP_POLICY=${WARMUP_POLICY:-mix}  # scripted play imitated by the warm-up
SFT_STEPS=${SFT_STEPS:-300}
SFT_LR=${SFT_LR:-1e-2}
ROUNDS=${ROUNDS:-16}
RL_GROUPS=${RL_GROUPS:-16}
GSIZE=${GSIZE:-8}
RL_LR=${RL_LR:-2e-3}          # 5e-3 collapsed to one deterministic losing policy by round 12
# Training reward: the env reward less a penalty per out-of-range guess.
# With 0.05 one val run (seed 2, 150 SFT steps) settled on safe
# out-of-range numbers (never invalid, never found); 0.25 keeps the
# pressure on finding the secret.
REWARD=${REWARD:-env - 0.25*out_of_range}
EVAL_EPISODES=${EVAL_EPISODES:-200}
EVAL_SPLIT=${EVAL_SPLIT:-test}   # test: final numbers; val: for choosing settings
THREADS=${THREADS:-2}
INIT_STD=${INIT_STD:-0.3}

# Held-out scenario seeds, disjoint from the warm-up (1xxxxx) and training
# rounds (2xxxxx) seeds. Tune with EVAL_SPLIT=val; report only test.
case $EVAL_SPLIT in
test) EVAL_SEED=$((900000 + SEED)) ;;
val) EVAL_SEED=$((800000 + SEED)) ;;
*) echo "EVAL_SPLIT must be test or val" >&2; exit 2 ;;
esac

for b in hone-train hone-collect hone-score hone-serve hone-inspect; do
	[ -x "$BIN/$b" ] || { echo "demo: $BIN/$b missing; run make build" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "demo: jq is needed for the summary" >&2; exit 2; }

start=$(date +%s)
log() { echo "[demo $(($(date +%s) - start))s] $*"; }
ENV_OPTS=(--env guess --env-opt "n=$N" --env-opt "turns=$TURNS")

rm -rf "$OUT"
mkdir -p "$OUT"/data "$OUT"/rounds "$OUT"/scored "$OUT"/eval "$OUT"/adapters

log "1/7 tiny random model (seed $SEED)"
"$BIN"/hone-train init-model --family qwen3 --hidden 64 --layers 2 --heads 4 \
	--init-std "$INIT_STD" --seed "$SEED" -o "$OUT"/model >/dev/null

log "2/7 warm-up data: scripted $WARMUP_POLICY"
"$BIN"/hone-collect "${ENV_OPTS[@]}" --groups 4000 -G 1 --policy "scripted:$WARMUP_POLICY" \
	--seed $((100000 + SEED)) --run warmup-data -o "$OUT"/data/warmup.parquet 2>"$OUT"/data/collect.log

log "3/7 SFT warm-up: $SFT_STEPS steps"
"$BIN"/hone-train sft --model "$OUT"/model --run warmup --out "$OUT"/adapters \
	--lr "$SFT_LR" --max-grad-norm 1 --batch-size 32 --steps "$SFT_STEPS" \
	--save-every "$SFT_STEPS" --keep-last 1 --seed "$SEED" --threads "$THREADS" \
	"$OUT"/data/warmup.parquet >"$OUT"/sft.log 2>&1
log "    $(tail -1 "$OUT"/sft.log)"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN"/hone-serve --model "$OUT"/model --adapters "$OUT"/adapters --port "$port" \
	--served-model-name base --poll-interval 200ms --threads "$THREADS" --max-tokens 8 \
	>"$OUT"/serve.log 2>&1 &
serve_pid=$!
stop_server() {
	kill "$serve_pid" 2>/dev/null || true
	wait "$serve_pid" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 130' INT TERM
URL=http://127.0.0.1:$port/v1

# wait_model NAME: until the server lists NAME (adapter steps load async).
wait_model() {
	for _ in $(seq 600); do
		if curl -fsS "$URL/models" 2>/dev/null | jq -e --arg m "$1" 'any(.data[]; .id == $m)' >/dev/null; then
			return 0
		fi
		kill -0 "$serve_pid" 2>/dev/null || { echo "demo: hone-serve died; see $OUT/serve.log" >&2; return 1; }
		sleep 0.2
	done
	echo "demo: model $1 never appeared; see $OUT/serve.log" >&2
	return 1
}
log "4/7 hone-serve on port $port"
wait_model base
wait_model warmup

# evaluate LABEL MODEL STEP: held-out episodes, greedy and at T=1, summarized
# in OUT/eval/LABEL-T<t>.json as one JSON line that `hone-inspect report
# --eval` reads: the base model is its own line, the warm-up (the adapter
# run rl starts from, so its step 0) and rl@ROUNDS are one line "rl T=<t>"
# over rl's steps.
evaluate() {
	local label=$1 model=$2 step=$3 t line=rl
	[ "$label" = base ] && line=base
	for t in 0 1; do
		"$BIN"/hone-collect "${ENV_OPTS[@]}" --groups "$EVAL_EPISODES" -G 1 --model "$model" \
			--base-url "$URL" --api-key none --temperature "$t" --max-tokens 4 \
			--seed "$EVAL_SEED" --run "eval-$label" \
			-o "$OUT/eval/$label-T$t.parquet" 2>>"$OUT"/eval/collect.log
		"$BIN"/hone-inspect to-jsonl "$OUT/eval/$label-T$t.parquet" 2>/dev/null |
			jq -sc --arg name "$label" --arg t "$t" --arg line "$line T=$t" --argjson step "$step" '{
				label: $line, step: $step, run: "rl",
				model: $name, temperature: ($t | tonumber), episodes: length,
				success: (map(.metrics.found) | add / length),
				invalid: (map(.metrics.invalid) | add / length),
				out_of_range_per_guess: ((map(.metrics.out_of_range) | add) / (map(.metrics.turns) | add)),
				mean_reward: (map(.reward) | add / length)}' >"$OUT/eval/$label-T$t.json"
	done
	log "    $label: greedy $(jq .success "$OUT/eval/$label-T0.json"), T=1 $(jq .success "$OUT/eval/$label-T1.json")"
}
log "5/7 evaluation before RL ($EVAL_SPLIT split, $EVAL_EPISODES episodes each)"
evaluate base base 0
evaluate warmup warmup 0

warm_step=$OUT/adapters/warmup/$(cat "$OUT"/adapters/warmup/latest)
log "6/7 GRPO: $ROUNDS rounds of $RL_GROUPS secrets x $GSIZE tries"
model=warmup
for r in $(seq "$ROUNDS"); do
	f=$(printf 'round-%03d.parquet' "$r")
	"$BIN"/hone-collect "${ENV_OPTS[@]}" --groups "$RL_GROUPS" -G "$GSIZE" --model "$model" \
		--base-url "$URL" --api-key none --temperature 1 --max-tokens 4 \
		--seed $((200000 + SEED * 1000 + r)) --run rl -o "$OUT/rounds/$f" 2>>"$OUT"/rounds/collect.log
	"$BIN"/hone-score --scorer env --scorer "formula:$REWARD" -o "$OUT/scored/$f" "$OUT/rounds/$f" 2>>"$OUT"/scored/score.log
	"$BIN"/hone-train grpo --model "$OUT"/model --run rl --out "$OUT"/adapters \
		--init-adapter "$warm_step" --watch-dir "$OUT"/scored --steps 1 \
		--lr "$RL_LR" --seed "$SEED" --threads "$THREADS" --keep-last 2 \
		>>"$OUT"/grpo.log 2>&1
	model=rl@$r
	wait_model "$model"
	if [ $((r % 5)) -eq 0 ] || [ "$r" -eq 1 ]; then
		log "    round $r: $(jq -c '{step, reward_mean, entropy}' "$OUT"/adapters/rl/metrics.jsonl 2>/dev/null | tail -1)"
	fi
done

log "7/7 evaluation after RL"
evaluate rl "rl@$ROUNDS" "$ROUNDS"

# The server's counters, kept with the run: how much prompt prefill the
# prefix cache saved over the multi-turn episodes.
if curl -fsS "http://127.0.0.1:$port/metrics" >"$OUT"/serve-metrics.txt 2>/dev/null; then
	log "    hone-serve: $(awk '$1 == "hone_serve_prefix_cache_hits_total" {h = $2} $1 == "hone_serve_prefix_cache_queries_total" {q = $2}
		END {printf "%d of %d prompt tokens came from the prefix cache", h, q}' "$OUT"/serve-metrics.txt)"
fi

jq -s --argjson seed "$SEED" --arg split "$EVAL_SPLIT" --argjson secs $(($(date +%s) - start)) \
	'{seed: $seed, split: $split, wall_seconds: $secs, results: .}' \
	"$OUT"/eval/base-T0.json "$OUT"/eval/base-T1.json "$OUT"/eval/warmup-T0.json \
	"$OUT"/eval/warmup-T1.json "$OUT"/eval/rl-T0.json "$OUT"/eval/rl-T1.json >"$OUT"/summary.json.tmp
mv "$OUT"/summary.json.tmp "$OUT"/summary.json

echo
echo "guess-the-number 1..$N in $TURNS turns, $EVAL_EPISODES held-out $EVAL_SPLIT episodes, seed $SEED"
jq -r '.results[] | [.model, (if .temperature == 0 then "greedy" else "T=1" end),
	(.success * 100 | round | tostring) + "%", (.invalid * 100 | round | tostring) + "%",
	(.out_of_range_per_guess * 100 | round | tostring) + "%"] | @tsv' "$OUT"/summary.json |
	(echo -e "model\tsampling\tsuccess\tinvalid\tout-of-range guesses"; cat) | column -t -s $'\t'
jq -r '.results as $r | def s(m; t): ($r[] | select(.model == m and .temperature == t) | .success);
	"GRPO gain (warmup -> rl): greedy \((s("rl"; 0) - s("warmup"; 0)) * 100 | round) points, T=1 \((s("rl"; 1) - s("warmup"; 1)) * 100 | round) points",
	"whole pipeline (base -> rl): greedy \((s("rl"; 0) - s("base"; 0)) * 100 | round) points, T=1 \((s("rl"; 1) - s("base"; 1)) * 100 | round) points"' "$OUT"/summary.json
log "done; summary in $OUT/summary.json"
