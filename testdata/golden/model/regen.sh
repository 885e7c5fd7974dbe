#!/bin/sh
# Regenerates every case folder and golden.json here, then the checksums in SHA256SUMS.
# Run from anywhere: sh testdata/golden/model/regen.sh
set -eu
cd "$(dirname "$0")"
/usr/bin/python3 reference.py make-cases .
for c in gemma3 llama llama3_long llama_bias mistral qwen2 qwen3; do /usr/bin/python3 reference.py golden "$c"; done
sha256sum reference.py */inputs.json */model/* */adapter/* */golden.json > SHA256SUMS
