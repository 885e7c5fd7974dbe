#!/usr/bin/env python3
"""PyTorch reference rows for Hone's device check (issue #28).

Random weights, nothing downloaded. On a Qwen2 shape (Qwen2.5-0.5B, a 7B
shape like Qwen2.5-7B, or a tiny one for tests) in bfloat16 it measures

  train   a LoRA GRPO-style training step: --batch sequences of --seq tokens,
          LoRA rank --rank (alpha 2 x rank, no dropout) on q,k,v,o,gate,up,down;
          forward, per-token logprobs of the next tokens, a policy-gradient
          loss  -sum(adv_seq * logprob * mask) / sum(mask)  (advantages: rewards
          normalised per batch, as in GRPO; mask: the last 3/4 of every
          sequence, the "completion"), backward, AdamW on the LoRA weights only.
          Every step uses the same batch, so the loss should fall. tokens/s =
          batch x seq x timed steps / their wall time, after --warmup steps.
  decode  greedy decoding with a KV cache, no adapter: a prompt of --prompt
          tokens for each of --decode-batch sequences, then --new-tokens steps
          of one token each; tokens/s = decode-batch x new-tokens / the steps'
          wall time (prefill timed apart).

and checks the plain decoder below in float32: golden (against a qwen2 case
of testdata/golden/model: logits, logprobs, LoRA gradients) and same-math
(against transformers + PEFT with the same weights, where they import).

Implementation: transformers' Qwen2ForCausalLM built from a Qwen2Config (SDPA
attention, eager: no torch.compile) with PEFT's LoraConfig/get_peft_model
when both import; otherwise a plain-torch Qwen2 decoder and LoRA in this file
with the same math (RMSNorm in float32, RoPE, GQA, SwiGLU, q/k/v biases;
LoRA weights in float32 as PEFT keeps them for bf16 base layers, the input
cast to float32, the sum cast back). Every record says which ran, and why
the other did not.

Output: one JSON object per measurement, one per line, in --out (rewritten
through a temporary file and a rename after each measurement, so that what
was measured survives a later time-out), and a line "RESULT ..." per
measurement on stdout.

  python3 torch_bench.py --shape 05b --measure train,decode --out r.jsonl
  /usr/bin/python3 torch_bench.py --device cpu --tiny --out tiny.jsonl
"""

import argparse
import gc
import json
import math
import os
import platform
import resource
import struct
import sys
import time

# Largest relative error the float32 checks (same-math, golden) accept.
CHECK_TOL = 1e-4

MODS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# Qwen2 shapes. 05b: Qwen2.5-0.5B (format/hfconfig/testdata/qwen2.5-0.5b-instruct,
# train/internal/modelbench's 05b). 7b: Qwen2.5-7B. tiny: for tests on a CPU.
SHAPES = {
    "tiny": dict(vocab=320, hidden=64, layers=2, heads=4, kv_heads=2, inter=160, tied=False),
    "05b": dict(vocab=151936, hidden=896, layers=24, heads=14, kv_heads=2, inter=4864, tied=True),
    "7b": dict(vocab=152064, hidden=3584, layers=28, heads=28, kv_heads=4, inter=18944, tied=False),
}
ROPE_THETA = 1e6
EPS = 1e-6


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda or cpu")
    p.add_argument("--shape", default="05b", choices=sorted(SHAPES))
    p.add_argument("--tiny", action="store_true",
                   help="the tiny shape with small batches and lr 1e-2, for tests (with --device cpu)")
    p.add_argument("--measure", default="train,decode",
                   help="comma-separated: train, decode, same-math (the plain decoder against transformers + PEFT), "
                        "golden (the plain decoder against --golden)")
    p.add_argument("--golden", default="", help="a qwen2 case folder of testdata/golden/model, for --measure golden")
    p.add_argument("--impl", default="auto", choices=["auto", "hf", "plain", "both"],
                   help="hf: transformers + PEFT; plain: this file's decoder; auto: hf when both import, "
                        "the plain decoder where they do not or where a row fails with them; both: hf and plain")
    p.add_argument("--batch", type=int, default=8, help="training sequences per step")
    p.add_argument("--seq", type=int, default=1024, help="tokens per training sequence")
    p.add_argument("--micro-batch", type=int, default=0,
                   help="sequences per forward/backward (0: the whole batch; halved after an out-of-memory error)")
    p.add_argument("--fake-oom-above", type=int, default=0,
                   help="for tests: act as if a step with a micro-batch above this ran out of memory")
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=1, help="untimed training steps first")
    p.add_argument("--steps", type=int, default=3, help="timed training steps")
    p.add_argument("--decode-batch", type=int, default=32)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="JSON Lines file to write")
    a = p.parse_args(argv)
    if a.tiny:
        a.shape, a.batch, a.seq, a.warmup, a.steps = "tiny", 2, 32, 1, 5
        a.decode_batch, a.prompt, a.new_tokens, a.lr = 4, 8, 8, 1e-2
    for k in ("batch", "seq", "rank", "steps", "decode_batch", "prompt", "new_tokens"):
        if getattr(a, k) < 1:
            p.error("--%s must be >= 1" % k.replace("_", "-"))
    if a.seq < 4:
        p.error("--seq must be >= 4")
    a.measure = [m for m in a.measure.split(",") if m]
    for m in a.measure:
        if m not in ("train", "decode", "same-math", "golden"):
            p.error("--measure: unknown %r (train, decode, same-math, golden)" % m)
    if "golden" in a.measure and not a.golden:
        p.error("--measure golden needs --golden DIR")
    return a


# ---------------------------------------------------------------- plain torch

def build_plain(torch, s, dtype, device):
    """A Qwen2 decoder with transformers' parameter names."""
    nn = torch.nn
    F = torch.nn.functional
    C, H, KV, I, V = s["hidden"], s["heads"], s["kv_heads"], s["inter"], s["vocab"]
    D = C // H
    kw = dict(dtype=dtype, device=device)

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(C, **kw))

        def forward(self, x):
            xf = x.float()
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + s.get("eps", EPS))
            return self.weight * xf.to(x.dtype)

    def attend(q, k, v, causal):
        # q [B, H, T, D], k/v [B, KV, S, D]
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if sdpa is not None:
            try:
                return sdpa(q, k, v, is_causal=causal, enable_gqa=True)
            except TypeError:  # torch < 2.5: no enable_gqa
                pass
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        if sdpa is not None:
            return sdpa(q, k, v, is_causal=causal)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        if causal:
            T, S = q.shape[2], k.shape[2]
            mask = torch.ones(T, S, dtype=torch.bool, device=q.device).tril(S - T)
            att = att.masked_fill(~mask, float("-inf"))
        return att.float().softmax(-1).to(q.dtype) @ v

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(C, H * D, bias=True, **kw)
            self.k_proj = nn.Linear(C, KV * D, bias=True, **kw)
            self.v_proj = nn.Linear(C, KV * D, bias=True, **kw)
            self.o_proj = nn.Linear(H * D, C, bias=False, **kw)

        def forward(self, x, cos, sin, cache, start):
            B, T, _ = x.shape
            q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
            k = self.k_proj(x).view(B, T, KV, D).transpose(1, 2)
            v = self.v_proj(x).view(B, T, KV, D).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if cache is not None:
                kc, vc = cache
                kc[:, :, start:start + T] = k
                vc[:, :, start:start + T] = v
                k, v = kc[:, :, :start + T], vc[:, :, :start + T]
            if cache is not None and T > 1 and start != 0:
                raise ValueError("plain decoder: several new tokens after a cached prefix are not supported")
            o = attend(q, k, v, causal=T > 1)
            return self.o_proj(o.transpose(1, 2).reshape(B, T, H * D))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(C, I, bias=False, **kw)
            self.up_proj = nn.Linear(C, I, bias=False, **kw)
            self.down_proj = nn.Linear(I, C, bias=False, **kw)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm()
            self.self_attn = Attention()
            self.post_attention_layernorm = RMSNorm()
            self.mlp = MLP()

        def forward(self, x, cos, sin, cache, start):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, start)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(V, C, **kw)
            self.layers = nn.ModuleList([Layer() for _ in range(s["layers"])])
            self.norm = RMSNorm()

    class Qwen2(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = Body()
            if not s["tied"]:
                self.lm_head = nn.Linear(C, V, bias=False, **kw)
            inv = 1.0 / (s.get("rope_theta", ROPE_THETA) ** (torch.arange(0, D, 2, dtype=torch.float32, device=device) / D))
            self.register_buffer("inv_freq", inv, persistent=False)

        def head(self):
            return self.model.embed_tokens.weight if s["tied"] else self.lm_head.weight

        def forward(self, ids, caches=None, start=0):
            B, T = ids.shape
            pos = torch.arange(start, start + T, device=ids.device, dtype=torch.float32)
            ang = pos[:, None] * self.inv_freq[None, :]
            emb = torch.cat([ang, ang], dim=-1)
            x = self.model.embed_tokens(ids)
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            for i, layer in enumerate(self.model.layers):
                x = layer(x, cos, sin, None if caches is None else caches[i], start)
            return F.linear(self.model.norm(x), self.head())

    return Qwen2()


def add_plain_lora(torch, model, r, alpha, targets=MODS, rslora=False):
    """Wraps the targets (q..down) of every layer: y = base(x) + (x A^T B^T) *
    alpha/r (alpha/sqrt(r) with rsLoRA), A and B in float32 (A Kaiming-uniform
    as PEFT, B zero). Freezes everything else."""
    nn = torch.nn

    class LoraLinear(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base = base
            dev = base.weight.device
            self.lora_A = nn.Parameter(torch.empty(r, base.in_features, dtype=torch.float32, device=dev))
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, dtype=torch.float32, device=dev))
            self.scale = alpha / (math.sqrt(r) if rslora else r)

        def forward(self, x):
            y = self.base(x)
            d = (x.to(torch.float32) @ self.lora_A.t()) @ self.lora_B.t()
            return (y + d * self.scale).to(y.dtype)

    for p in model.parameters():
        p.requires_grad_(False)
    for layer in model.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for m in targets:
                if hasattr(parent, m):
                    setattr(parent, m, LoraLinear(getattr(parent, m)))
    return model


# ---------------------------------------------------------------- transformers

def hf_config(s, dtype_name):
    from transformers import Qwen2Config
    return Qwen2Config(vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["inter"],
                       num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                       num_key_value_heads=s["kv_heads"], max_position_embeddings=32768,
                       rms_norm_eps=EPS, rope_theta=ROPE_THETA, tie_word_embeddings=s["tied"],
                       attention_dropout=0.0, use_sliding_window=False, attn_implementation="sdpa",
                       torch_dtype=dtype_name)


def build_hf(torch, s, dtype, device):
    from transformers import Qwen2ForCausalLM
    cfg = hf_config(s, str(dtype).replace("torch.", ""))
    old = torch.get_default_dtype()
    try:
        try:
            torch.set_default_dtype(dtype)
        except (TypeError, RuntimeError):
            pass
        with torch.device(device):
            model = Qwen2ForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    model.to(device=device)
    if any(p.dtype != dtype for p in model.parameters()):
        # Only where the default dtype could not be set: this casts the
        # rotary inv_freq too, which transformers keeps in float32.
        model.to(dtype=dtype)
    return model


def add_peft_lora(model, r, alpha):
    from peft import LoraConfig, get_peft_model
    return get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=MODS,
                                            bias="none", task_type="CAUSAL_LM"))


def choose_impl(want):
    """Returns (impl, versions, reason the other did not run)."""
    versions = {"transformers": None, "peft": None}
    missing = []
    try:
        import transformers
        versions["transformers"] = transformers.__version__
    except Exception as e:  # noqa: BLE001 - any failure to import means the fallback
        missing.append("transformers: %s" % e)
    try:
        import peft
        versions["peft"] = peft.__version__
    except Exception as e:  # noqa: BLE001
        missing.append("peft: %s" % e)
    if want == "plain":
        return "plain-torch", versions, "--impl plain"
    if want == "both" and missing:
        return "plain-torch", versions, "; ".join(missing)
    if missing:
        if want == "hf":
            raise SystemExit("--impl hf: " + "; ".join(missing))
        return "plain-torch", versions, "; ".join(missing)
    return "transformers+peft", versions, None


# ---------------------------------------------------------------- measuring

def init_weights(torch, model, std=0.02):
    """transformers' Qwen2 initialisation: normal(0, std) matrices and
    embeddings, zero biases, unit norms. The same for both implementations."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora" in name:
                continue
            if p.dim() >= 2:
                p.normal_(0.0, std)
            elif "norm" in name:
                p.fill_(1.0)
            else:
                p.zero_()


def fingerprint(torch, p):
    d = p.detach().double()
    return (d.sum().item(), d.pow(2).sum().item())


def sync(torch, device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def reset_peak(torch, device):
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()


def peak(torch, device):
    if device.startswith("cuda"):
        return {"peak_memory_bytes": torch.cuda.max_memory_allocated(),
                "peak_memory_kind": "torch.cuda.max_memory_allocated",
                "peak_reserved_bytes": torch.cuda.max_memory_reserved()}
    return {"peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "peak_memory_kind": "process peak RSS (getrusage)"}


def is_oom(e):
    return "out of memory" in str(e).lower()


def free(torch, device):
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def counted_flops_train(s, B, T):
    """2 x the forward matmul FLOPs (forward and input gradient; base weights get
    no gradient) + 3 x the causal attention FLOPs, as train/internal/modelbench
    counts; LoRA and element-wise work left out."""
    C, H, KV, I, V, L = s["hidden"], s["heads"], s["kv_heads"], s["inter"], s["vocab"], s["layers"]
    D = C // H
    per_tok = L * (C * H * D + 2 * C * KV * D + H * D * C + 3 * C * I) + C * V
    mm = 2.0 * B * T * per_tok
    attn = L * B * 4.0 * H * D * T * (T + 1) / 2
    return 2 * mm + 3 * attn


def measure_train(torch, a, s, impl, device, dtype):
    torch.manual_seed(a.seed)  # weights and LoRA init: the same whatever ran before
    g = torch.Generator(device="cpu").manual_seed(a.seed)
    if impl == "transformers+peft":
        model = build_hf(torch, s, dtype, device)
        init_weights(torch, model)
        model = add_peft_lora(model, a.rank, 2 * a.rank)
        attn = getattr(model.config, "_attn_implementation", None)
    else:
        model = build_plain(torch, s, dtype, device)
        init_weights(torch, model)
        model = add_plain_lora(torch, model, a.rank, 2 * a.rank)
        attn = "sdpa" if hasattr(torch.nn.functional, "scaled_dot_product_attention") else \
            "matmul-softmax (this torch has no scaled_dot_product_attention)"
    model.train()
    lora = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    frozen = [(n, p) for n, p in model.named_parameters() if not p.requires_grad]
    if not lora or any("lora" not in n for n, _ in lora):
        raise SystemExit("trainable parameters are not all LoRA weights: %s" % [n for n, _ in lora][:5])
    before_frozen = [fingerprint(torch, p) for _, p in frozen]
    before_lora = [p.detach().clone() for _, p in lora]
    opt = torch.optim.AdamW([p for _, p in lora], lr=a.lr)

    B, T, V = a.batch, a.seq, s["vocab"]
    ids = torch.randint(0, V, (B, T), generator=g).to(device)
    rewards = torch.randn(B, generator=g)
    # GRPO's advantages: rewards normalised over the group (one sequence: 1).
    adv = (rewards - rewards.mean()) / (rewards.std() + 1e-4) if B > 1 else torch.ones(1)
    adv = adv.to(device)
    mask = torch.zeros(B, T - 1)
    mask[:, (T // 4):] = 1.0
    mask = mask.to(device)

    def logits_of(x):
        if impl == "transformers+peft":
            return model(input_ids=x, use_cache=False).logits
        return model(x)

    micro = a.micro_batch if a.micro_batch > 0 else B
    oom_retries = 0

    def step():
        opt.zero_grad(set_to_none=True)
        total = mask.sum()
        loss_sum = 0.0
        for i in range(0, B, micro):
            lg = logits_of(ids[i:i + micro])[:, :-1].float()
            tgt = ids[i:i + micro, 1:]
            lp = lg.gather(-1, tgt[..., None]).squeeze(-1) - torch.logsumexp(lg, -1)
            loss = -(adv[i:i + micro, None] * lp * mask[i:i + micro]).sum() / total
            del lg, lp
            loss.backward()
            loss_sum += loss.item()
            del loss
        opt.step()
        return loss_sum

    sync(torch, device)
    free(torch, device)
    reset_peak(torch, device)
    losses, times = [], []
    while len(times) < a.warmup + a.steps:
        t0 = time.perf_counter()
        oom = False
        try:
            if 0 < a.fake_oom_above < micro:
                raise RuntimeError("CUDA out of memory (--fake-oom-above %d)" % a.fake_oom_above)
            loss = step()
        except RuntimeError as e:
            if not is_oom(e) or micro == 1:
                raise
            oom = True
        if oom:
            # Out of the except clause: its traceback no longer holds the step's tensors.
            opt.zero_grad(set_to_none=True)
            free(torch, device)
            reset_peak(torch, device)  # the peak of the attempt that failed is not the step's
            micro = max(1, micro // 2)
            oom_retries += 1
            print("out of memory: retrying with micro-batch %d" % micro, flush=True)
            continue
        sync(torch, device)
        times.append(time.perf_counter() - t0)
        losses.append(loss)
    mem = peak(torch, device)
    timed = sum(times[a.warmup:])

    frozen_changed = sum(1 for (_, p), f in zip(frozen, before_frozen) if fingerprint(torch, p) != f)
    lora_changed = sum(1 for (_, p), b in zip(lora, before_lora) if not torch.equal(p.detach(), b))
    rec = dict(mode="train", batch=B, seq=T, rank=a.rank, lora_alpha=2 * a.rank, lr=a.lr,
               micro_batch=micro, oom_retries=oom_retries, warmup_steps=a.warmup, timed_steps=a.steps,
               tokens_per_s=B * T * a.steps / timed, seconds_per_step=timed / a.steps,
               step_seconds=times, losses=losses, attention=attn,
               counted_tflops_per_s=counted_flops_train(s, B, T) * a.steps / timed / 1e12,
               lora_dtype=str(lora[0][1].dtype).replace("torch.", ""),
               trainable_params=sum(p.numel() for _, p in lora), lora_tensors=len(lora),
               lora_tensors_changed=lora_changed, frozen_tensors=len(frozen),
               frozen_tensors_changed=frozen_changed)
    rec.update(mem)
    del model, opt, lora, frozen, before_lora
    free(torch, device)
    return rec


def measure_decode(torch, a, s, impl, device, dtype):
    torch.manual_seed(a.seed + 1)
    g = torch.Generator(device="cpu").manual_seed(a.seed + 1)
    if impl == "transformers+peft":
        model = build_hf(torch, s, dtype, device)
        loop = "Qwen2ForCausalLM forward with past_key_values (transformers' cache), greedy argmax"
    else:
        model = build_plain(torch, s, dtype, device)
        loop = "plain decoder over a preallocated KV cache, greedy argmax"
    init_weights(torch, model)
    model.eval()
    B, P, N = a.decode_batch, a.prompt, a.new_tokens
    prompt = torch.randint(0, s["vocab"], (B, P), generator=g).to(device)
    D = s["hidden"] // s["heads"]
    sync(torch, device)
    free(torch, device)
    reset_peak(torch, device)
    with torch.no_grad():
        t0 = time.perf_counter()
        if impl == "transformers+peft":
            out = model(input_ids=prompt, use_cache=True)
            past = out.past_key_values
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        else:
            caches = [(torch.zeros(B, s["kv_heads"], P + N, D, dtype=dtype, device=device),
                       torch.zeros(B, s["kv_heads"], P + N, D, dtype=dtype, device=device))
                      for _ in range(s["layers"])]
            nxt = model(prompt, caches, 0)[:, -1].argmax(-1, keepdim=True)
        sync(torch, device)
        prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(N):
            if impl == "transformers+peft":
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            else:
                nxt = model(nxt, caches, P + i)[:, -1].argmax(-1, keepdim=True)
        sync(torch, device)
        dur = time.perf_counter() - t0
    rec = dict(mode="decode", batch=B, prompt=P, new_tokens=N, tokens_per_s=B * N / dur,
               seconds_per_token_step=dur / N, prefill_seconds=prefill, prefill_tokens_per_s=B * P / prefill,
               decode_loop=loop, adapter=None)
    rec.update(peak(torch, device))
    del model
    free(torch, device)
    return rec


def measure_same_math(torch, a, device):
    """The plain decoder and LoRA against transformers + PEFT on the tiny shape in
    float32, with the same weights (biases and norms nonzero) and a nonzero
    adapter: the largest difference of the logits over their largest magnitude."""
    s = SHAPES["tiny"]
    torch.manual_seed(a.seed)
    base = build_hf(torch, s, torch.float32, device)
    with torch.no_grad():
        for name, p in base.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.2 if p.dim() >= 2 else 0.1)
    hf = add_peft_lora(base, 4, 8)
    plain = build_plain(torch, s, torch.float32, device)
    keys = plain.load_state_dict(base_state(hf), strict=False)
    plain = add_plain_lora(torch, plain, 4, 8)
    with torch.no_grad():
        for l, layer in enumerate(plain.model.layers):
            for parent, sub in ((layer.self_attn, "self_attn"), (layer.mlp, "mlp")):
                for m in MODS:
                    if not hasattr(parent, m):
                        continue
                    peft_mod = hf.base_model.model.get_submodule("model.layers.%d.%s.%s" % (l, sub, m))
                    A = peft_mod.lora_A["default"].weight
                    Bw = peft_mod.lora_B["default"].weight
                    Bw.normal_(0.0, 0.05)
                    getattr(parent, m).lora_A.copy_(A)
                    getattr(parent, m).lora_B.copy_(Bw)
    ids = torch.randint(0, s["vocab"], (2, 24), device=device)
    hf.eval()
    plain.eval()
    with torch.no_grad():
        want = hf(input_ids=ids, use_cache=False).logits.float()
        got = plain(ids).float()
    err = ((got - want).abs().max() / want.abs().max()).item()
    return dict(mode="same-math", shape="tiny", dtype="float32", max_rel_err=err, tolerance=CHECK_TOL,
                ok=err <= CHECK_TOL,
                unexpected_keys=list(keys.unexpected_keys), missing_keys=list(keys.missing_keys))


def read_safetensors(torch, path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    kinds = {"F32": (torch.float32, torch.float32), "F16": (torch.int16, torch.float16),
             "BF16": (torch.int16, torch.bfloat16)}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in kinds:
            raise ValueError("%s: tensor %s: dtype %s not supported" % (path, name, info["dtype"]))
        b, e = info["data_offsets"]
        raw, dt = kinds[info["dtype"]]
        t = torch.frombuffer(bytearray(data[8 + n + b:8 + n + e]), dtype=raw).view(dt)
        out[name] = t.reshape(info["shape"]).to(torch.float32)
    return out


def measure_golden(torch, a, device):
    """The plain decoder and LoRA in float32 against a model golden case of
    testdata/golden/model (written by its reference.py in float64): logits,
    logprobs of the targets and the gradients of sum(weights * logprobs) with
    respect to every LoRA tensor."""
    d = a.golden
    with open(os.path.join(d, "model", "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(d, "adapter", "adapter_config.json")) as f:
        acfg = json.load(f)
    with open(os.path.join(d, "inputs.json")) as f:
        inp = json.load(f)
    with open(os.path.join(d, "golden.json")) as f:
        gold = json.load(f)
    if cfg.get("model_type") != "qwen2" or cfg.get("rope_scaling") or \
            cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"]) * cfg["num_attention_heads"] != cfg["hidden_size"]:
        raise ValueError("%s: the plain decoder is Qwen2 without rope scaling" % d)
    s = dict(vocab=cfg["vocab_size"], hidden=cfg["hidden_size"], layers=cfg["num_hidden_layers"],
             heads=cfg["num_attention_heads"], kv_heads=cfg["num_key_value_heads"], inter=cfg["intermediate_size"],
             tied=cfg.get("tie_word_embeddings", False), rope_theta=cfg["rope_theta"], eps=cfg["rms_norm_eps"])
    model = build_plain(torch, s, torch.float32, device)
    W = read_safetensors(torch, os.path.join(d, "model", "model.safetensors"))
    keys = model.load_state_dict(W, strict=False)
    if keys.missing_keys or keys.unexpected_keys:
        raise ValueError("%s: weights do not match the plain decoder: missing %s, unexpected %s" % (
            d, keys.missing_keys, keys.unexpected_keys))
    model = add_plain_lora(torch, model, acfg["r"], acfg["lora_alpha"], acfg["target_modules"],
                           acfg.get("use_rslora", False))
    ad = read_safetensors(torch, os.path.join(d, "adapter", "adapter_model.safetensors"))
    params = {}
    with torch.no_grad():
        for l, layer in enumerate(model.model.layers):
            for parent, sub in ((layer.self_attn, "self_attn"), (layer.mlp, "mlp")):
                for m in acfg["target_modules"]:
                    if not hasattr(parent, m):
                        continue
                    p = "base_model.model.model.layers.%d.%s.%s." % (l, sub, m)
                    mod = getattr(parent, m)
                    mod.lora_A.copy_(ad.pop(p + "lora_A.weight"))
                    mod.lora_B.copy_(ad.pop(p + "lora_B.weight"))
                    params[p + "lora_A.weight"] = mod.lora_A
                    params[p + "lora_B.weight"] = mod.lora_B
    if ad:
        raise ValueError("%s: adapter tensors the plain LoRA does not hold: %s" % (d, sorted(ad)))
    ids, pos, starts = inp["input_ids"], inp["position_ids"], inp["seq_starts"] + [len(inp["input_ids"])]
    parts = []
    for b, e in zip(starts, starts[1:]):
        if pos[b:e] != list(range(pos[b], pos[b] + e - b)):
            raise ValueError("%s: positions of the sequence at %d are not consecutive" % (d, b))
        parts.append(model(torch.tensor([ids[b:e]], device=device), None, pos[b])[0])
    logits = torch.cat(parts)
    lp = logits.log_softmax(-1).gather(1, torch.tensor(inp["targets"], device=device)[:, None])[:, 0]
    loss = (torch.tensor(inp["weights"], device=device) * lp).sum()
    names = sorted(params)
    grads = torch.autograd.grad(loss, [params[n] for n in names])

    def rel(got, want):
        want = torch.tensor(want, dtype=torch.float64)
        return ((got.detach().double().cpu() - want).abs().max() / want.abs().max()).item()

    errs = dict(max_rel_err_logits=rel(logits, gold["logits"]), max_rel_err_logprobs=rel(lp, gold["logprobs"]),
                max_rel_err_grads=max(rel(g_, gold["grads"][n]) for n, g_ in zip(names, grads)))
    return dict(mode="golden", case=os.path.basename(os.path.normpath(d)), dtype="float32", lora_tensors=len(names),
                tolerance=CHECK_TOL, ok=max(errs.values()) <= CHECK_TOL, **errs)


def base_state(hf):
    # PEFT wraps targets as <module>.base_layer; map back to transformers' names.
    out = {}
    for k, v in hf.base_model.model.state_dict().items():
        if "lora_" in k:
            continue
        out[k.replace(".base_layer.", ".")] = v
    return out


def write_records(path, recs):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv):
    a = parse(argv)
    import torch
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    device = a.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device %s: torch %s sees no CUDA device" % (device, torch.__version__))
    torch.manual_seed(a.seed)
    impl, versions, why = choose_impl(a.impl)
    s = SHAPES[a.shape]
    dtype = torch.bfloat16
    common = dict(shape=a.shape, dtype="bfloat16", device=device, implementation=impl,
                  fallback_reason=why, torch=torch.__version__, transformers=versions["transformers"],
                  peft=versions["peft"], python=platform.python_version(), torch_compile=False,
                  torch_threads=torch.get_num_threads(), config=s)
    if device.startswith("cuda"):
        common.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda,
                      gpu_memory_bytes=torch.cuda.get_device_properties(0).total_memory)
    recs = []
    failed = False
    impls = [impl]
    if a.impl == "both":
        impls = ["transformers+peft", "plain-torch"] if impl == "transformers+peft" else ["plain-torch"]
    for m in a.measure:
        row_impls = impls
        if m == "golden":
            row_impls = ["plain-torch"]
        elif m == "same-math":
            row_impls = ["transformers+peft"] if impl == "transformers+peft" else []
            if not row_impls:
                print("same-math skipped: %s" % why, flush=True)
        for im in row_impls:
            rec = run_one(torch, a, s, m, im, why if im == impl else "--impl both", common, device, dtype)
            recs.append(rec)
            write_records(a.out, recs)
            print("RESULT " + summary(rec), flush=True)
            if "error" not in rec or m == "same-math" or im != "transformers+peft" or a.impl != "auto":
                failed = failed or "error" in rec or rec.get("ok") is False
                continue
            # transformers + PEFT failed here (an API this version lacks, or
            # memory): the plain decoder measures the row instead.
            failed = True
            rec = run_one(torch, a, s, m, "plain-torch", "transformers+peft failed: " + rec["error"], common,
                          device, dtype)
            recs.append(rec)
            write_records(a.out, recs)
            print("RESULT " + summary(rec), flush=True)
    return 1 if failed else 0


def run_one(torch, a, s, m, impl, why, common, device, dtype):
    t0 = time.perf_counter()
    try:
        if m == "train":
            r = measure_train(torch, a, s, impl, device, dtype)
        elif m == "decode":
            r = measure_decode(torch, a, s, impl, device, dtype)
        elif m == "golden":
            r = measure_golden(torch, a, device)
        else:
            r = measure_same_math(torch, a, device)
    except Exception as e:  # noqa: BLE001 - one row's failure is recorded; the others still run
        r = dict(mode=m, error=("%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else ""))[:500])
    if "error" in r:
        free(torch, device)  # here, once the exception's frames (and the model they hold) are gone
    rec = dict(common)
    rec.update(implementation=impl, fallback_reason=why if impl == "plain-torch" else None)
    if m in ("same-math", "golden"):
        rec.pop("config")
        rec["shape"] = r.get("case", "?") if m == "golden" else "tiny"
        rec["dtype"] = "float32"
    rec.update(r)
    rec["wall_seconds"] = time.perf_counter() - t0
    return rec


def summary(r):
    head = "%s %s %s:" % (r["implementation"], r["shape"], r["mode"])
    if "error" in r:
        return head + " FAILED " + r["error"]
    if r.get("ok") is False:
        head += " FAILED (over the tolerance %g)" % r["tolerance"]
    if r["mode"] == "same-math":
        return head + " max relative logit error %.2e (float32)" % r["max_rel_err"]
    if r["mode"] == "golden":
        return head + " max relative error against the float64 golden: logits %.2e, logprobs %.2e, LoRA gradients %.2e (float32)" % (
            r["max_rel_err_logits"], r["max_rel_err_logprobs"], r["max_rel_err_grads"])
    gb = r["peak_memory_bytes"] / 1e9
    if r["mode"] == "train":
        return head + " %d x %d, rank %d: %.0f tokens/s, %.3g counted TFLOP/s, peak %.2f GB, loss %.4g -> %.4g, micro-batch %d" % (
            r["batch"], r["seq"], r["rank"], r["tokens_per_s"], r["counted_tflops_per_s"], gb, r["losses"][0],
            r["losses"][-1], r["micro_batch"])
    return head + " batch %d, prompt %d, %d new: %.0f tokens/s, peak %.2f GB" % (
        r["batch"], r["prompt"], r["new_tokens"], r["tokens_per_s"], gb)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
