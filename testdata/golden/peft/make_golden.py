"""Writes a golden PEFT LoRA adapter with known values, for Hone's reader test.

Usage: /usr/bin/python3 testdata/golden/peft/make_golden.py testdata/golden/peft

Creates, inside the given folder:
  adapter/adapter_config.json       PEFT LoraConfig keys (rsLoRA, r=4, alpha=8, 5 modules)
  adapter/adapter_model.safetensors bf16 A [r, in] and B [out, r] for 2 layers, written
                                    by stfile.write (json + struct, not Hone's writer)
  config.json                       the tiny llama base model the shapes belong to
  values.json                       every tensor as float (exact: bf16 → float64) and
                                    ΔW = scaling · B @ A per module (torch, float64)
Values come from torch.Generator seeded with 20261202, so reruns are byte-identical.
"""
import json
import math
import os
import sys

import torch

sys.dont_write_bytecode = True  # keep __pycache__ out of testdata
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stfile  # noqa: E402

HIDDEN, INTER, HEADS, KV_HEADS, LAYERS = 16, 24, 4, 2, 2
HEAD_DIM = HIDDEN // HEADS
R, ALPHA = 4, 8
MODULES = ["q_proj", "v_proj", "o_proj", "up_proj", "down_proj"]
DIMS = {  # module: (in, out)
    "q_proj": (HIDDEN, HEADS * HEAD_DIM),
    "v_proj": (HIDDEN, KV_HEADS * HEAD_DIM),
    "o_proj": (HEADS * HEAD_DIM, HIDDEN),
    "up_proj": (HIDDEN, INTER),
    "down_proj": (INTER, HIDDEN),
}
BLOCK = {"q_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn", "up_proj": "mlp", "down_proj": "mlp"}


def main(out):
    os.makedirs(os.path.join(out, "adapter"), exist_ok=True)
    g = torch.Generator().manual_seed(20261202)
    tensors = {}
    values = {"tensors": {}, "delta": {}}
    scaling = ALPHA / math.sqrt(R)
    for layer in range(LAYERS):
        for mod in MODULES:
            fin, fout = DIMS[mod]
            a = (torch.randn(R, fin, generator=g) * 0.3).to(torch.bfloat16)
            b = (torch.randn(fout, R, generator=g) * 0.3).to(torch.bfloat16)
            prefix = f"base_model.model.model.layers.{layer}.{BLOCK[mod]}.{mod}."
            tensors[prefix + "lora_A.weight"] = a
            tensors[prefix + "lora_B.weight"] = b
            values["tensors"][prefix + "lora_A.weight"] = {"shape": [R, fin], "values": a.to(torch.float64).flatten().tolist()}
            values["tensors"][prefix + "lora_B.weight"] = {"shape": [fout, R], "values": b.to(torch.float64).flatten().tolist()}
            delta = scaling * (b.to(torch.float64) @ a.to(torch.float64))
            values["delta"][f"{layer}.{mod}"] = delta.flatten().tolist()
    stfile.write(os.path.join(out, "adapter", "adapter_model.safetensors"), tensors, {"format": "pt"})
    cfg = {
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "hone-golden/tiny-llama",
        "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
        "layers_pattern": None, "layers_to_transform": None, "lora_alpha": ALPHA, "lora_dropout": 0.05,
        "modules_to_save": None, "peft_type": "LORA", "r": R, "rank_pattern": {}, "revision": None,
        "target_modules": sorted(MODULES), "task_type": "CAUSAL_LM", "use_dora": False, "use_rslora": True,
    }
    with open(os.path.join(out, "adapter", "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    model = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": HIDDEN,
        "intermediate_size": INTER, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS, "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(model, f, indent=2, sort_keys=True)
        f.write("\n")
    values["scaling"] = scaling
    with open(os.path.join(out, "values.json"), "w") as f:
        json.dump(values, f, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
