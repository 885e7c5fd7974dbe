// Command hone-score fills in the rewards of trajectory files: the
// environment's own, a formula over metrics and components, or RULER (an
// LLM judge ranking the attempts of each group). It is flags and wiring
// over package score; inputs, -o, signals, logs and exit codes follow
// cmd/internal/cli.
//
//	hone-score -o scored.parquet --scorer env runs/r1/
//	hone-score -o scored.parquet --judge-model qwen3-32b \
//	    --judge-base-url http://localhost:8000/v1 \
//	    --scorer ruler --scorer 'final=formula:0.8*ruler + 0.2*env' trajectories.parquet
package main
