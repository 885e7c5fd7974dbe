#!/usr/bin/env bash
# The demo loop, and a loop to adapt to your own job. By default a tiny
# random model learns guess-the-number on a CPU.
#
#   1. init-model       a random qwen3-style model (byte-level tokenizer),
#                       or the model folder MODEL names
#   2. warm-up data     the environment's scripted WARMUP_POLICY ("mix" for
#                       guess: bisection in 30% of episodes, random-in-range
#                       otherwise)
#   3. SFT warm-up      a LoRA adapter that imitates it (run "warmup");
#                       SFT_STEPS=0 skips 2 and 3 (GRPO from a fresh LoRA)
#   4. hone-serve       in the background, hot-reloading OUT/adapters
#   5. evaluation       base and warm-up on held-out scenarios
#   6. GRPO rounds      collect (RL_GROUPS scenarios x GSIZE tries, T=1) ->
#                       hone-score SCORERS -> one GRPO step (run "rl", each
#                       round a new session of it); the server picks up each
#                       step
#   7. evaluation       after GRPO, then a before/after table,
#                       OUT/summary.json and OUT/report.html
#                       (hone-inspect report)
#
# Your job: set the environment, the scorers and the metric to evaluate.
#   ENV            environment of hone-collect --env (default guess)
#   ENV_OPTS       its --env-opt settings, separated by ";" (default
#                  "n=$N;turns=$TURNS"; N and TURNS are read only then),
#                  e.g. "cmd=python3 env.py" for stdio
#   WARMUP_POLICY  scripted policy imitated by the warm-up (--policy
#                  scripted:NAME; default mix)
#   WARMUP_EPISODES  episodes of it played for the warm-up (default 4000;
#                  a stdio program pays two process starts an episode, so
#                  a few hundred keep a first try short)
#   SCORERS        hone-score --scorer specs in order, separated by ";"
#                  (default "env;formula:$REWARD")
#   EVAL_METRIC    the environment metric whose mean per held-out episode is
#                  the summary's "success" (default found)
#   EVAL_COLUMNS   more columns of the summary, separated by spaces or ";": METRIC
#                  (its mean per episode) or NAME=METRIC/METRIC (a ratio of
#                  sums); default "invalid out_of_range_per_guess=out_of_range/turns".
#                  A metric no episode of the base model's greedy evaluation
#                  reports stops the run there (exit 2), naming those it has
#   MAX_TOKENS     tokens per assistant turn (default 4)
#   TRAIN_ENV_OPTS more --env-opt settings for the GRPO rounds' games only
#                  (";"-separated; default none): the warm-up data and the
#                  evaluations keep ENV_OPTS alone
# Everything lands under OUT (default out/demo); a run starts fresh (the
# folder is removed first, if an earlier run wrote it: any other non-empty
# folder stops the script). INIT_OPTS: more flags of hone-train init-model
# for the tiny random model (e.g. --tie-embeddings). PRECISION_OPTS: flags of
# hone-train sft/grpo and hone-serve for how the weights are held and
# multiplied, e.g. "--dtype bfloat16 --compute bf16" (the bf16 compute mode:
# a CPU with AVX512-BF16). BIN: the binaries' folder (default: the bin/ of
# the checkout holding this script, links to it followed, else ./bin). Other knobs: MODEL, SEED, ROUNDS,
# EVAL_EPISODES, EVAL_SPLIT, SFT_STEPS, RL_GROUPS, GSIZE, RL_LR, THREADS.
# The server is always stopped on exit.
set -euo pipefail

# BIN: by default the bin/ of the checkout holding this script (make build
# writes there), so that the script runs from any working folder; ./bin
# where that has no binaries (a copy of the script kept elsewhere). The
# checkout is where the script's file is, through any links to it (one in
# ~/bin) or to its folders: next to the link there is no bin/.
if [ -z "${BIN:-}" ]; then
	BIN=bin
	src=$0
	while [ -L "$src" ]; do
		link=$(readlink "$src")
		case $link in /*) src=$link ;; *) src=$(dirname "$src")/$link ;; esac
	done
	checkout_bin=$(CDPATH='' cd -P -- "$(dirname "$src")/.." && pwd -P)/bin
	[ -x "$checkout_bin/hone-train" ] && BIN=$checkout_bin
fi
OUT=${OUT:-out/demo}
SEED=${SEED:-1}
N=${N:-32}                       # secrets in 1..N
TURNS=${TURNS:-5}                # guesses per episode
ENV=${ENV:-guess}
# N and TURNS reach the game only through ENV_OPTS' default: they are
# checked (whole, below) only when it is used, so that an ENV_OPTS of its
# own (another environment, or n= and turns= given there) is not refused
# over an N or TURNS the run never reads.
if [ -z "${ENV_OPTS+set}" ]; then
	ENV_OPTS="n=$N;turns=$TURNS"
	uses_n_turns=1
else
	uses_n_turns=
fi
WARMUP_POLICY=${WARMUP_POLICY:-mix}  # scripted play imitated by the warm-up
WARMUP_EPISODES=${WARMUP_EPISODES:-4000}  # its episodes the warm-up imitates
MODEL=${MODEL:-}                 # a model folder to use instead of a tiny random one
MAX_TOKENS=${MAX_TOKENS:-4}
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
SCORERS=${SCORERS:-env;formula:$REWARD}
EVAL_METRIC=${EVAL_METRIC:-found}
EVAL_COLUMNS=${EVAL_COLUMNS-invalid out_of_range_per_guess=out_of_range/turns}
EVAL_EPISODES=${EVAL_EPISODES:-200}
EVAL_SPLIT=${EVAL_SPLIT:-test}   # test: final numbers; val: for choosing settings
THREADS=${THREADS:-2}
INIT_STD=${INIT_STD:-0.3}
INIT_OPTS=${INIT_OPTS:-}
read -r -a INIT_ARGS <<<"$INIT_OPTS"
PRECISION_OPTS=${PRECISION_OPTS:-}
read -r -a PREC_ARGS <<<"$PRECISION_OPTS"

# The whole numbers, checked before anything runs: a typo (SFT_STEPS=3OO)
# made `[ "$SFT_STEPS" -gt 0 ]` fail as a test, which skipped the warm-up
# without a word, and ROUNDS=0 trained nothing and then failed evaluating a
# step 0 that no round wrote. Nine digits at most keep bash's arithmetic on
# them (seed offsets, round counts) far from its 64-bit wrap.
whole() {
	local name=$1 min=$2 value=${!1}
	if ! [[ $value =~ ^(0|[1-9][0-9]{0,8})$ ]] || [ "$value" -lt "$min" ]; then
		echo "demo: $name=$value must be a whole number from $min to 999999999" >&2
		exit 2
	fi
}
whole SEED 0
if [ -n "$uses_n_turns" ]; then
	whole N 1
	whole TURNS 1
fi
whole MAX_TOKENS 1
whole SFT_STEPS 0
whole WARMUP_EPISODES 1
whole ROUNDS 1
whole RL_GROUPS 1
whole GSIZE 1
whole EVAL_EPISODES 1
whole THREADS 1
# Held-out scenario seeds, disjoint from the warm-up (1xxxxx) and training
# rounds (2xxxxx) seeds. Tune with EVAL_SPLIT=val; report only test.
# Computed only once SEED is checked: bash's arithmetic reads SEED=x as a
# variable's name ("x: unbound variable", exit 1) and runs what an index
# like a[$(...)] holds.
case $EVAL_SPLIT in
test) EVAL_SEED=$((900000 + SEED)) ;;
val) EVAL_SEED=$((800000 + SEED)) ;;
*) echo "EVAL_SPLIT must be test or val" >&2; exit 2 ;;
esac
# An OUT that starts with "-" would reach rm and the stages as an option.
case $OUT in -*) OUT=./$OUT ;; esac

for b in hone-train hone-collect hone-score hone-serve hone-inspect; do
	[ -x "$BIN/$b" ] || { echo "demo: $BIN/$b missing; run make build" >&2; exit 2; }
done
# Every tool the script runs, checked before anything starts: without curl
# (polling the server) the run waited two minutes on a server that was
# fine, without column it failed after training, at the summary table.
for tool in jq curl python3 column; do
	command -v "$tool" >/dev/null || { echo "demo: $tool is needed (jq, curl, python3 and column: Debian's jq, curl, python3, bsdextrautils)" >&2; exit 2; }
done

start=$(date +%s)
log() { echo "[demo $(($(date +%s) - start))s] $*"; }

# logged LOG CMD...: runs CMD with its stderr appended to LOG. When CMD
# fails, says so on stderr with the end of LOG and stops the script with
# CMD's exit status: a stage's reasons go to its log, and without this the
# run stopped with no word of which stage failed or where to look.
logged() {
	local log=$1 rc=0
	shift
	"$@" 2>>"$log" || rc=$?
	[ "$rc" -eq 0 ] && return 0
	echo "demo: ${1##*/} failed (exit $rc); the end of $log:" >&2
	tail -n 20 "$log" >&2
	exit "$rc"
}

# splitlist SEP STRING: the items of STRING separated by SEP, one a line,
# without surrounding blanks; empty items dropped.
splitlist() {
	local item
	local -a items
	IFS=$1 read -r -a items <<<"$2"
	for item in "${items[@]}"; do
		item=${item#"${item%%[![:space:]]*}"}
		item=${item%"${item##*[![:space:]]}"}
		[ -n "$item" ] && printf '%s\n' "$item"
	done
	return 0
}
ENV_ARGS=(--env "$ENV")
while IFS= read -r o; do ENV_ARGS+=(--env-opt "$o"); done < <(splitlist ';' "$ENV_OPTS")
TRAIN_ENV_ARGS=("${ENV_ARGS[@]}")
while IFS= read -r o; do TRAIN_ENV_ARGS+=(--env-opt "$o"); done < <(splitlist ';' "${TRAIN_ENV_OPTS:-}")
SCORE_ARGS=()
while IFS= read -r s; do SCORE_ARGS+=(--scorer "$s"); done < <(splitlist ';' "$SCORERS")
[ ${#SCORE_ARGS[@]} -gt 0 ] || { echo "demo: SCORERS is empty" >&2; exit 2; }

# The run starts fresh, but removes only what a run of this script wrote
# (its mark, or from before the mark an earlier output's adapters/ and
# eval/): OUT=~/my-job, a folder of the user's, was deleted whole.
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null || echo unreadable)" ] && [ ! -e "$OUT"/.hone-demo ] &&
	! { [ -d "$OUT"/adapters ] && [ -d "$OUT"/eval ]; }; then
	echo "demo: OUT=$OUT holds files that no demo run wrote; name another folder, or remove it first" >&2
	exit 2
fi
rm -rf "$OUT"
mkdir -p "$OUT"/data "$OUT"/rounds "$OUT"/scored "$OUT"/eval "$OUT"/adapters
echo "written by pipelines/demo.sh, which removes this folder when it runs into it again" >"$OUT"/.hone-demo

if [ -n "$MODEL" ]; then
	log "1/7 model folder $MODEL"
	[ -d "$MODEL" ] || { echo "demo: MODEL=$MODEL is not a folder" >&2; exit 2; }
	ln -s "$(cd "$MODEL" && pwd)" "$OUT"/model
else
	log "1/7 tiny random model (seed $SEED)"
	"$BIN"/hone-train init-model --family qwen3 --hidden 64 --layers 2 --heads 4 \
		--init-std "$INIT_STD" --seed "$SEED" ${INIT_ARGS[@]+"${INIT_ARGS[@]}"} -o "$OUT"/model >/dev/null
fi

if [ "$SFT_STEPS" -gt 0 ]; then
	log "2/7 warm-up data: $WARMUP_EPISODES episodes of scripted $WARMUP_POLICY"
	# One episode first, laid out with the model's chat template as the
	# SFT warm-up lays out every row (hone-inspect render --ids): a policy
	# whose rows the template cannot hold (a tool call, and a template
	# with no tool-call format) was refused by hone-train sft at row 0,
	# after the 4000 episodes below had been collected, minutes later.
	logged "$OUT"/data/collect.log "$BIN"/hone-collect "${ENV_ARGS[@]}" --groups 1 -G 1 --policy "scripted:$WARMUP_POLICY" \
		--seed $((100000 + SEED)) --run warmup-probe -o "$OUT"/data/probe.parquet
	logged "$OUT"/data/collect.log "$BIN"/hone-inspect to-jsonl "$OUT"/data/probe.parquet >"$OUT"/data/probe.jsonl
	rc=0
	why=$("$BIN"/hone-inspect render --model "$OUT"/model --ids <"$OUT"/data/probe.jsonl 2>&1 >/dev/null) || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "demo: the model's chat template cannot lay out the warm-up's rows (WARMUP_POLICY=$WARMUP_POLICY), which hone-train sft would refuse: ${why#hone-inspect: }" >&2
		exit "$rc"
	fi
	rm -f "$OUT"/data/probe.parquet "$OUT"/data/probe.jsonl
	logged "$OUT"/data/collect.log "$BIN"/hone-collect "${ENV_ARGS[@]}" --groups "$WARMUP_EPISODES" -G 1 --policy "scripted:$WARMUP_POLICY" \
		--seed $((100000 + SEED)) --run warmup-data -o "$OUT"/data/warmup.parquet

	log "3/7 SFT warm-up: $SFT_STEPS steps"
	logged "$OUT"/sft.log "$BIN"/hone-train sft --model "$OUT"/model --run warmup --out "$OUT"/adapters \
		--lr "$SFT_LR" --max-grad-norm 1 --batch-size 32 --steps "$SFT_STEPS" \
		--save-every "$SFT_STEPS" --keep-last 1 --seed "$SEED" --threads "$THREADS" \
		${PREC_ARGS[@]+"${PREC_ARGS[@]}"} "$OUT"/data/warmup.parquet >>"$OUT"/sft.log
	log "    $(tail -1 "$OUT"/sft.log)"
else
	log "2-3/7 no warm-up (SFT_STEPS=0): GRPO starts from a fresh LoRA adapter"
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN"/hone-serve --model "$OUT"/model --adapters "$OUT"/adapters --port "$port" \
	--served-model-name base --poll-interval 200ms --threads "$THREADS" --max-tokens $((2 * MAX_TOKENS)) \
	${PREC_ARGS[@]+"${PREC_ARGS[@]}"} \
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
[ "$SFT_STEPS" -gt 0 ] && wait_model warmup

# EVAL_COLUMNS as a JSON list of {name, num, den}: a column is the mean of
# metric num per episode, or with den the ratio of the two metrics' sums.
# Spaces or ";" separate them: README calls the variables lists separated
# by ";", and "a;b" split on spaces alone was one metric named "a;b".
EVAL_COLS=$(jq -cn --arg s "$EVAL_COLUMNS" '[$s | splits("[ ;]+")] | map(select(. != "")) | map(
	(if test("=") then (split("=") | {name: .[0], spec: (.[1:] | join("="))}) else {name: null, spec: .} end)
	| . + (.spec | split("/") | {num: .[0], den: .[1]})
	| .name //= (if .den then "\(.num)_per_\(.den)" else .num end) | del(.spec))')

# check_eval_metrics FILE: every metric EVAL_METRIC and EVAL_COLUMNS name is
# one that the held-out episodes of FILE which ended on their own report. A
# name no episode has (a typo, another environment's metric) would otherwise
# count as 0 in every row of the summary, indistinguishable from a model that
# never succeeds.
check_eval_metrics() {
	local have missing
	# Only episodes the environment ended itself: one cut off by --max-turns
	# or failed has the metrics of its last step, or none.
	# (Called in an && list, where set -e does not hold: a failed read
	# exits here, not later as "the episodes report no metrics".)
	have=$(logged "$OUT"/eval/inspect.log "$BIN"/hone-inspect to-jsonl "$1" | jq -rs '
		map(select((.error // "") == "" and (.metrics.truncated // 0) == 0)) |
		if length == 0 then "-" else [.[].metrics // {} | keys[]] | unique | join(" ") end') || exit $?
	if [ "$have" = - ]; then
		log "    note: every held-out episode was cut off or failed; EVAL_METRIC and EVAL_COLUMNS not checked"
		return 0
	fi
	missing=$(jq -rn --arg metric "$EVAL_METRIC" --argjson cols "$EVAL_COLS" --arg have "$have" '
		($have | split(" ")) as $h | [$metric, ($cols[] | .num, (.den // empty))] | unique
		| map(select(. as $m | $h | index([$m]) | not)) | join(" ")')
	[ -z "$missing" ] && return 0
	echo "demo: no held-out episode of $ENV reports the metric(s) $missing (EVAL_METRIC=$EVAL_METRIC, EVAL_COLUMNS='$EVAL_COLUMNS'); the episodes report: ${have:-no metrics}. Name those, and have the environment report each metric in every episode, 0 included" >&2
	exit 2
}

# evaluate LABEL MODEL STEP: held-out episodes, greedy and at T=1, summarized
# in OUT/eval/LABEL-T<t>.json as one JSON line that `hone-inspect report
# --eval` reads: the base model is its own line, the warm-up (the adapter
# run rl starts from, so its step 0) and rl@ROUNDS are one line "rl T=<t>"
# over rl's steps. "success" is the mean of EVAL_METRIC per episode.
evaluate() {
	local label=$1 model=$2 step=$3 t line=rl
	[ "$label" = base ] && line=base
	for t in 0 1; do
		logged "$OUT"/eval/collect.log "$BIN"/hone-collect "${ENV_ARGS[@]}" --groups "$EVAL_EPISODES" -G 1 --model "$model" \
			--base-url "$URL" --api-key none --temperature "$t" --max-tokens "$MAX_TOKENS" \
			--seed "$EVAL_SEED" --split "$EVAL_SPLIT" --run "eval-$label" \
			-o "$OUT/eval/$label-T$t.parquet"
		[ "$label" = base ] && [ "$t" = 0 ] && check_eval_metrics "$OUT/eval/$label-T$t.parquet"
		# Through a file, not a pipe: a failed read stops the run with
		# hone-inspect's exit status, not jq's on the empty input.
		logged "$OUT"/eval/inspect.log "$BIN"/hone-inspect to-jsonl "$OUT/eval/$label-T$t.parquet" >"$OUT/eval/$label-T$t.jsonl"
		jq -sc --arg name "$label" --arg t "$t" --arg line "$line T=$t" --argjson step "$step" \
			--arg metric "$EVAL_METRIC" --argjson cols "$EVAL_COLS" '
			def total(m): map(.metrics[m] // 0) | add;
			. as $eps | {
			label: $line, step: $step, run: "rl",
			model: $name, temperature: ($t | tonumber), episodes: length, metric: $metric,
			success: (total($metric) / length)}
			+ ([$cols[] as $c | {($c.name): (if $c.den then total($c.den) as $d | if $d == 0 then null else total($c.num) / $d end
				else total($c.num) / length end)}] | add // {})
			+ {mean_reward: (map(.reward) | add / length)}' <"$OUT/eval/$label-T$t.jsonl" >"$OUT/eval/$label-T$t.json"
	done
	log "    $label: greedy $(jq .success "$OUT/eval/$label-T0.json"), T=1 $(jq .success "$OUT/eval/$label-T1.json")"
}
log "5/7 evaluation before RL ($EVAL_SPLIT split, $EVAL_EPISODES episodes each, $EVAL_METRIC)"
evaluate base base 0
evals=("$OUT"/eval/base-T0.json "$OUT"/eval/base-T1.json)
init=()
model=base
if [ "$SFT_STEPS" -gt 0 ]; then
	evaluate warmup warmup 0
	evals+=("$OUT"/eval/warmup-T0.json "$OUT"/eval/warmup-T1.json)
	init=(--init-adapter "$OUT/adapters/warmup/$(cat "$OUT"/adapters/warmup/latest)")
	model=warmup
fi

log "6/7 GRPO: $ROUNDS rounds of $RL_GROUPS scenarios x $GSIZE tries"
for r in $(seq "$ROUNDS"); do
	f=$(printf 'round-%03d.parquet' "$r")
	logged "$OUT"/rounds/collect.log "$BIN"/hone-collect "${TRAIN_ENV_ARGS[@]}" --groups "$RL_GROUPS" -G "$GSIZE" --model "$model" \
		--base-url "$URL" --api-key none --temperature 1 --max-tokens "$MAX_TOKENS" \
		--seed $((200000 + SEED * 1000 + r)) --run rl -o "$OUT/rounds/$f"
	logged "$OUT"/scored/score.log "$BIN"/hone-score "${SCORE_ARGS[@]}" -o "$OUT/scored/$f" "$OUT/rounds/$f"
	# One step per round on the files the run has not consumed yet (the
	# cron-style incremental mode; see the README on rounds).
	logged "$OUT"/grpo.log "$BIN"/hone-train grpo --model "$OUT"/model --run rl --out "$OUT"/adapters \
		${init[@]+"${init[@]}"} --watch-dir "$OUT"/scored --steps 1 \
		--lr "$RL_LR" --seed "$SEED" --threads "$THREADS" --keep-last 2 \
		${PREC_ARGS[@]+"${PREC_ARGS[@]}"} >>"$OUT"/grpo.log
	model=rl@$r
	wait_model "$model"
	if [ $((r % 5)) -eq 0 ] || [ "$r" -eq 1 ] || [ "$r" -eq "$ROUNDS" ]; then
		log "    round $r: $(jq -c '{step, reward_mean, entropy}' "$OUT"/adapters/rl/metrics.jsonl 2>/dev/null | tail -1)"
	fi
done

log "7/7 evaluation after RL"
evaluate rl "rl@$ROUNDS" "$ROUNDS"
evals+=("$OUT"/eval/rl-T0.json "$OUT"/eval/rl-T1.json)

# The server's counters, kept with the run: how much prompt prefill the
# prefix cache saved over the multi-turn episodes.
if curl -fsS "http://127.0.0.1:$port/metrics" >"$OUT"/serve-metrics.txt 2>/dev/null; then
	log "    hone-serve: $(awk '$1 == "hone_serve_prefix_cache_hits_total" {h = $2} $1 == "hone_serve_prefix_cache_queries_total" {q = $2}
		END {printf "%d of %d prompt tokens came from the prefix cache", h, q}' "$OUT"/serve-metrics.txt)"
fi

jq -s --argjson seed "$SEED" --arg split "$EVAL_SPLIT" --argjson secs $(($(date +%s) - start)) \
	'{seed: $seed, split: $split, wall_seconds: $secs, results: .}' "${evals[@]}" >"$OUT"/summary.json.tmp
mv "$OUT"/summary.json.tmp "$OUT"/summary.json

echo
echo "$ENV${ENV_OPTS:+ ($ENV_OPTS)}, $EVAL_EPISODES held-out $EVAL_SPLIT episodes, seed $SEED; success = mean $EVAL_METRIC per episode"
jq -r --argjson cols "$EVAL_COLS" 'def show: if . == null then "-" else . * 100 | round / 100 | tostring end;
	.results[] | [.model, (if .temperature == 0 then "greedy" else "T=1" end), (.success | show)]
	+ [. as $row | $cols[] | $row[.name] | show] | @tsv' "$OUT"/summary.json |
	(jq -r --argjson cols "$EVAL_COLS" -n '["model", "sampling", "success"] + [$cols[].name] | @tsv'; cat) | column -t -s $'\t'
jq -r 'def gain(a; b; t): .results as $r | [$r[] | select(.model == a and .temperature == t) | .success][0]
	- [$r[] | select(.model == b and .temperature == t) | .success][0] | . * 100 | round / 100 | if . >= 0 then "+\(.)" else "\(.)" end;
	(if any(.results[]; .model == "warmup") then "GRPO gain (warmup -> rl): greedy \(gain("rl"; "warmup"; 0)), T=1 \(gain("rl"; "warmup"; 1))" else empty end),
	"whole pipeline (base -> rl): greedy \(gain("rl"; "base"; 0)), T=1 \(gain("rl"; "base"; 1))"' "$OUT"/summary.json

log "report: hone-inspect report on run rl, its rounds and the evaluations"
# The evaluations by name, not as the pattern "$OUT/eval/*.json": an OUT
# whose name holds [ or * would make that a pattern matching nothing.
eval_args=()
for e in "${evals[@]}"; do eval_args+=(--eval "$e"); done
logged "$OUT"/report.log "$BIN"/hone-inspect report "$OUT"/adapters/rl --trajectories "$OUT"/scored "${eval_args[@]}" \
	-o "$OUT"/report.html
log "done; summary in $OUT/summary.json, report in $OUT/report.html"
