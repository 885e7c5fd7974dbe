#!/bin/sh
# Regenerates the golden PEFT adapter and its checksums. Run from the repository root:
#   sh testdata/golden/peft/regen.sh
set -eu
cd "$(dirname "$0")"
/usr/bin/python3 make_golden.py .
sha256sum adapter/adapter_config.json adapter/adapter_model.safetensors config.json values.json \
  make_golden.py stfile.py > SHA256SUMS
