#!/bin/sh
# Incremental GRPO training from cron: trains the run on every scored
# trajectory file in $HONE_SCORED that it has not consumed yet, then exits.
#
# - Exactly-once: OUT/RUN/manifest.json lists consumed files by sha256; a
#   session killed midway is finished (not restarted) by the next call.
# - Never overlapping: hone-train holds an flock on OUT/RUN/lock; a second
#   call while one trains fails at once with "held by another process"
#   (exit 1; the line lands in the log crontab.example sends output to, once
#   per call while a long session trains) and changes nothing. With HONE_ADAPTERS on
#   object storage (s3://...) the lock is in the local copy of the run, a new
#   temporary folder each call unless HONE_TRAIN_FLAGS names one with
#   --out-cache DIR: do, so that calls share it (docs/cluster.md).
# - Nothing new: logs the message "nothing new" (with watch_dir, files_consumed)
#   on stderr and exits 0.
#
# Settings (environment):
#   HONE_MODEL     base model folder                     (required)
#   HONE_SCORED    folder where scored *.parquet files land (required)
#   HONE_RUN       run name                              (default: cron)
#   HONE_ADAPTERS  folder of run folders                 (default: adapters)
#   HONE_TRAIN     the hone-train binary                 (default: hone-train on PATH)
#   HONE_TRAIN_FLAGS  extra flags, e.g. "--groups-per-step 16 --lr 1e-5"
set -eu
: "${HONE_MODEL:?set HONE_MODEL to the base model folder}"
: "${HONE_SCORED:?set HONE_SCORED to the folder of scored trajectory files}"
# Word splitting of HONE_TRAIN_FLAGS is intended: it holds several flags.
# Globbing is not: a flag's value such as eval_* is passed as written, not
# replaced by the names of files in cron's working folder.
set -f
# shellcheck disable=SC2086
exec "${HONE_TRAIN:-hone-train}" grpo \
	--model "$HONE_MODEL" \
	--out "${HONE_ADAPTERS:-adapters}" \
	--run "${HONE_RUN:-cron}" \
	--watch-dir "$HONE_SCORED" \
	${HONE_TRAIN_FLAGS:-}
