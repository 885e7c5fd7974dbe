#!/bin/sh
# Regenerates mixed.safetensors, values.json and SHA256SUMS. Run from anywhere:
#   sh format/safetensors/testdata/golden/regen.sh
set -eu
cd "$(dirname "$0")"
/usr/bin/python3 make_golden.py .
sha256sum mixed.safetensors values.json make_golden.py > SHA256SUMS
