"""PyTorch's own bf16 autocast on the model goldens' cases, for Hone's bf16
compute mode to be compared against (train/model TestBF16ComputeAccuracy).

For each case of ../model (gemma3, llama, llama3_long, llama_bias, mistral, qwen2, qwen3) it runs the reference
forward of ../model/reference.py in float32 under
torch.autocast("cpu", dtype=torch.bfloat16) — every matmul of the model, the
LoRA ones, attention's and the lm_head included, takes bfloat16 operands, as
autocast does — and writes, next to this script, <case>.json with the
per-token log-probabilities of the targets and their error against the
float64 golden logprobs (../model/<case>/golden.json): max and mean absolute
error over the tokens with a target.

Run: /usr/bin/python3 testdata/golden/bf16compute/autocast.py
(then sha256sum in regen.sh updates SHA256SUMS).
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "model")
sys.path.insert(0, MODEL)
import reference  # noqa: E402  (the goldens' own independent implementation)

CASES = ["gemma3", "llama", "llama3_long", "llama_bias", "mistral", "qwen2", "qwen3"]


def run(case):
    d = os.path.join(MODEL, case)
    with open(os.path.join(d, "model", "config.json")) as f:
        cfg = json.load(f)
    stored = {}
    W = {k: v.to(torch.float32) for k, v in
         reference.read_safetensors(os.path.join(d, "model", "model.safetensors"), stored).items()}
    with open(os.path.join(d, "adapter", "adapter_config.json")) as f:
        acfg = json.load(f)
    lora = reference.Lora({k: v.to(torch.float32) for k, v in
                           reference.read_safetensors(os.path.join(d, "adapter", "adapter_model.safetensors")).items()}, acfg)
    with open(os.path.join(d, "inputs.json")) as f:
        inp = json.load(f)
    with open(os.path.join(d, "golden.json")) as f:
        gold = json.load(f)
    tg = torch.tensor(inp["targets"])
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        # The model the goldens define: Gemma's embedding scale in the dtype embed_tokens is stored in.
        logits = reference.forward_f32(cfg, W, inp["input_ids"], inp["position_ids"], inp["seq_starts"], lora,
                                       stored["model.embed_tokens.weight"])
    lsm = logits.float().log_softmax(-1)
    lp = lsm.gather(1, tg.clamp(min=0)[:, None])[:, 0]
    lp = torch.where(tg >= 0, lp, torch.zeros_like(lp)).double()
    ref = torch.tensor(gold["logprobs"], dtype=torch.float64)
    err = (lp - ref).abs()[tg >= 0]
    return dict(
        torch_version=torch.__version__,
        autocast_dtype=str(logits.dtype),
        logprobs=[float("%.9g" % x) for x in lp.tolist()],
        max_abs_err=float("%.6g" % err.max().item()),
        mean_abs_err=float("%.6g" % err.mean().item()),
    )


def main():
    torch.set_num_threads(1)
    for c in CASES:
        out = run(c)
        with open(os.path.join(HERE, c + ".json"), "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        print("%s: autocast bf16 logprob error vs float64: max %.4g, mean %.4g (logits %s)"
              % (c, out["max_abs_err"], out["mean_abs_err"], out["autocast_dtype"]))


if __name__ == "__main__":
    main()
