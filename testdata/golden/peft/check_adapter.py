"""Independent check of a PEFT LoRA adapter folder, for Hone's Go tests.

Usage: /usr/bin/python3 testdata/golden/peft/check_adapter.py ADAPTER_DIR...

Reads adapter_config.json and adapter_model.safetensors without Hone's code (json +
struct + torch), checks them the way PEFT and vLLM read them (required keys, no DoRA,
no modules_to_save, bias "none", saved tensor names, A [r, in], B [out, r], header
padded to 8 bytes, __metadata__ format "pt"), and prints to stdout one JSON object
mapping each ADAPTER_DIR (as given) to

  {"scaling": s, "modules": {"<layer>.<module>": {"shape": [out, in], "delta": [...]}}}

where delta is ΔW = scaling · B @ A flattened row-major, computed with torch in float64.
Exits non-zero with a message on stderr when a check fails.
"""
import json
import math
import os
import re
import sys

import torch

sys.dont_write_bytecode = True  # keep __pycache__ out of testdata
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stfile  # noqa: E402

NAME = re.compile(r"^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])\.weight$")
BLOCK = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
         "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def check(d):
    with open(os.path.join(d, "adapter_config.json")) as f:
        cfg = json.load(f)
    for k in ("r", "lora_alpha", "target_modules"):
        assert k in cfg, f"adapter_config.json lacks {k} (vLLM requires it)"
    assert cfg.get("peft_type") == "LORA", cfg.get("peft_type")
    assert cfg.get("task_type") == "CAUSAL_LM", cfg.get("task_type")
    assert cfg.get("bias", "none") == "none"
    assert not cfg.get("use_dora", False), "DoRA"
    assert not cfg.get("modules_to_save"), "modules_to_save"
    assert cfg.get("fan_in_fan_out", False) is False
    assert isinstance(cfg["target_modules"], list)
    r = cfg["r"]
    alpha = cfg["lora_alpha"]
    scaling = alpha / math.sqrt(r) if cfg.get("use_rslora", False) else alpha / r

    meta, tensors, hlen = stfile.read(os.path.join(d, "adapter_model.safetensors"))
    assert (8 + hlen) % 8 == 0, "header not padded to 8 bytes"
    assert meta is not None and meta.get("format") == "pt", f"metadata {meta}"

    pairs = {}
    for name, t in tensors.items():
        m = NAME.match(name)
        assert m, f"unexpected tensor name {name}"
        layer, block, mod, which = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        assert BLOCK.get(mod) == block, f"{name}: {mod} not in {block}"
        assert mod in cfg["target_modules"], f"{name}: not targeted"
        pairs.setdefault((layer, mod), {})[which] = t

    out = {"scaling": scaling, "modules": {}}
    for (layer, mod), p in sorted(pairs.items()):
        a = p["A"].to(torch.float64)
        b = p["B"].to(torch.float64)
        assert a.dim() == 2 and b.dim() == 2 and a.shape[0] == r and b.shape[1] == r, (layer, mod, a.shape, b.shape)
        delta = scaling * (b @ a)
        out["modules"][f"{layer}.{mod}"] = {"shape": list(delta.shape), "delta": delta.flatten().tolist()}
    return out


if __name__ == "__main__":
    json.dump({d: check(d) for d in sys.argv[1:]}, sys.stdout)
