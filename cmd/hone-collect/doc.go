// Command hone-collect runs episodes of an environment against an
// OpenAI-compatible endpoint (hone-serve, vLLM, a hosted API) or with the
// environment's scripted policy, and writes groups of recorded trajectories
// as Parquet. It is flags and wiring over package collect; -o, signals,
// logs, progress and exit codes follow cmd/internal/cli.
//
//	hone-collect --env guess --groups 16 -G 8 --model myrun \
//	    --base-url http://localhost:8000/v1 -o runs/r1/step-0.parquet
//	hone-collect --env guess --groups 500 -G 1 --policy scripted:mix -o sft.parquet
package main
