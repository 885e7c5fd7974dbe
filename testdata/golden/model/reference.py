#!/usr/bin/python3
"""Independent PyTorch reference for Hone's train/model (Llama, Mistral, Qwen2, Qwen3, Gemma 3 + LoRA).

Two subcommands (and two benchmark ones, bench-train and bench-decode, which
time this reference for train/internal/modelbench; see their docstrings):

  reference.py make-cases OUTDIR
      Writes one folder per case (gemma3, llama, llama3_long, llama_bias, mistral, qwen2, qwen3)
      under OUTDIR, each with
        model/     config.json + model.safetensors (random weights; f32, bf16 or f16 on disk)
        adapter/   adapter_config.json + adapter_model.safetensors (PEFT names, random A and B)
        inputs.json  packed batch: input_ids, position_ids, seq_starts, targets, weights

  reference.py golden CASEDIR
      Reads CASEDIR/model, CASEDIR/adapter and CASEDIR/inputs.json (any model folder in
      the Hugging Face layout works) and writes CASEDIR/golden.json with, computed in
      float64 from the stored weights:
        logits        [T, V]  with the adapter on
        base_logits   [T, V]  with the adapter off
        logprobs      [T]     log softmax(logits)[t, targets[t]]
        entropy       [T]     -sum p log p of each row
        loss          scalar  sum_t weights[t] * logprobs[t]
        grads         {peft tensor name: d loss / d tensor}, for every lora_A and lora_B

The model here is written from the architecture descriptions only (plain torch ops):
embedding, RMSNorm, RoPE in the rotate_half convention with optional llama3 frequency
or linear scaling, grouped-query causal attention restricted to each packed sequence, SwiGLU
MLP, Qwen2 q/k/v bias, Llama's attention_bias (q/k/v/o) and mlp_bias (gate/up/down), Qwen3
per-head q/k RMSNorm before RoPE, explicit head_dim, tied embeddings, LoRA y += scale * B(A x)
with scale alpha/r (or alpha/sqrt(r) for rsLoRA), on the layers the adapter has tensors for
(PEFT layers_to_transform).

Mistral (model_type mistral), restated from transformers' configuration_mistral.py and
modeling_mistral.py: Llama's layers without biases, and with sliding_window set (its default
4096 when the key is absent; null turns it off) every layer sees only keys j with
i - j < sliding_window, with the model's one RoPE.

Gemma 3 (model_type gemma3_text), restated from transformers' modeling_gemma3.py
(Gemma3TextScaledWordEmbedding, Gemma3RMSNorm, Gemma3Attention, Gemma3DecoderLayer,
Gemma3TextModel) and configuration_gemma3.py (layer_types from sliding_window_pattern):
embeddings times sqrt(hidden_size) rounded to the dtype embed_tokens is stored in; every RMSNorm multiplies by (1 + w); per-head q/k
norms before RoPE; scores scaled by query_pre_attn_scalar**-0.5; sliding layers use
plain RoPE with base rope_local_base_freq and see only keys j with i - j < sliding_window
(transformers' sliding_window_overlay: kv_idx > q_idx - sliding_window), full layers use
rope_theta (and rope_scaling: linear divides their inverse frequencies by factor); x2 = x + post_attention_layernorm(attn(input_layernorm(x))), out = x2 +
post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x2))); MLP down(gelu_tanh(gate)
* up); tied lm_head by default. Soft-capping is not modelled (Gemma 3 sets it to null).
"""
import json
import math
import os
import struct
import sys

import torch

DT_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
DT_FROM = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
DT_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


# ---------------------------------------------------------------- safetensors by hand

def write_safetensors(path, tensors, metadata=None):
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        dt = DT_NAMES[t.dtype]
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype in (torch.float16, torch.bfloat16) else t.numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path, dtypes=None):
    """Returns {name: float64 tensor}; dtypes, when given, gets each tensor's stored dtype."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        dt = info["dtype"]
        if dtypes is not None:
            dtypes[name] = DT_FROM[dt]
        raw = bytearray(data[base + b:base + e])
        if dt in ("F16", "BF16"):
            t = torch.frombuffer(raw, dtype=torch.int16).view(DT_FROM[dt])
        else:
            t = torch.frombuffer(raw, dtype=DT_FROM[dt])
        out[name] = t.reshape(info["shape"]).to(torch.float64)
    return out


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------- the model

def rms_norm(x, w, eps, offset=False):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * ((1.0 + w) if offset else w)


def gemma3_layer_types(cfg):
    if cfg.get("layer_types"):
        return cfg["layer_types"]
    pat = cfg.get("sliding_window_pattern", 6)
    return ["sliding_attention" if (i + 1) % pat else "full_attention" for i in range(cfg["num_hidden_layers"])]


def inv_freq(cfg, head_dim):
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    rs = cfg.get("rope_scaling")
    if rs and (rs.get("rope_type") or rs.get("type")) == "llama3":
        factor = rs["factor"]
        lo = rs["low_freq_factor"]
        hi = rs["high_freq_factor"]
        L = rs["original_max_position_embeddings"]
        out = []
        for f in inv.tolist():
            wl = 2 * math.pi / f
            if wl < L / hi:
                out.append(f)
            elif wl > L / lo:
                out.append(f / factor)
            else:
                s = (L / wl - lo) / (hi - lo)
                out.append((1 - s) * f / factor + s * f)
        inv = torch.tensor(out, dtype=torch.float64)
    elif rs and (rs.get("rope_type") or rs.get("type")) == "linear":
        # transformers' _compute_linear_scaling_rope_parameters: inv_freq / factor.
        inv = inv / rs["factor"]
    return inv


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, pos, inv):
    # x [T, H, D]; pos [T]
    ang = pos.to(inv.dtype)[:, None] * inv[None, :]  # [T, D/2]
    emb = torch.cat([ang, ang], dim=-1)                    # [T, D]
    cos = emb.cos()[:, None, :]
    sin = emb.sin()[:, None, :]
    return x * cos + rotate_half(x) * sin


class Lora:
    def __init__(self, tensors, cfg):
        self.r = cfg["r"]
        self.alpha = cfg["lora_alpha"]
        self.scale = self.alpha / (math.sqrt(self.r) if cfg.get("use_rslora") else self.r)
        self.params = {k: v.clone().requires_grad_(True) for k, v in tensors.items()}

    def get(self, layer, mod):
        sub = "self_attn" if mod in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
        p = "base_model.model.model.layers.%d.%s.%s." % (layer, sub, mod)
        a = self.params.get(p + "lora_A.weight")
        b = self.params.get(p + "lora_B.weight")
        if a is None:
            return None
        return a, b


def linear(x, W, bias=None, lora=None, scale=1.0):
    y = x @ W.T
    if bias is not None:
        y = y + bias
    if lora is not None:
        a, b = lora
        y = y + scale * ((x @ a.T) @ b.T)
    return y


def forward(cfg, W, ids, pos, seq_starts, lora=None, embed_dtype=torch.float32):
    V = cfg["vocab_size"]
    C = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    D = cfg.get("head_dim") or C // H
    eps = cfg["rms_norm_eps"]
    mt = cfg["model_type"]
    T = len(ids)
    inv = inv_freq(cfg, D)
    gemma = mt == "gemma3_text"
    scale = 1 / math.sqrt(D)
    if gemma:
        kinds = gemma3_layer_types(cfg)
        local_inv = inv_freq(dict(rope_theta=cfg.get("rope_local_base_freq", 10000.0)), D)
        scale = cfg.get("query_pre_attn_scalar", 256) ** -0.5
        window = cfg.get("sliding_window", 4096)
    mistral_window = cfg.get("sliding_window", 4096) if mt == "mistral" else None
    if mistral_window is not None:
        window = mistral_window
    # Packed sequences: attention runs per sequence, causal inside it.
    bounds = list(zip(seq_starts, list(seq_starts[1:]) + [T]))

    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    if gemma:
        # Gemma3TextScaledWordEmbedding: embed_scale (a float32 buffer of sqrt(hidden_size)) .to(weight.dtype),
        # the dtype the embedding is stored in: in bf16, sqrt(48) = 6.928 is 6.9375 (transformers' comment:
        # "causing sqrt(3072)=55.4256 to become 55.5", PR 29402, as the original JAX Gemma does).
        x = x * torch.tensor(C ** 0.5, dtype=torch.float32).to(embed_dtype).to(x.dtype)
    pos_t = torch.tensor(pos)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        lr = (lambda m: lora.get(l, m)) if lora else (lambda m: None)
        sc = lora.scale if lora else 1.0
        sliding = (gemma and kinds[l] == "sliding_attention") or mistral_window is not None
        inv_l = local_inv if gemma and sliding else inv
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps, gemma)
        bias = (lambda n: W.get(p + "self_attn.%s.bias" % n))
        q = linear(h, W[p + "self_attn.q_proj.weight"], bias("q_proj"), lr("q_proj"), sc).view(T, H, D)
        k = linear(h, W[p + "self_attn.k_proj.weight"], bias("k_proj"), lr("k_proj"), sc).view(T, KV, D)
        v = linear(h, W[p + "self_attn.v_proj.weight"], bias("v_proj"), lr("v_proj"), sc).view(T, KV, D)
        if mt in ("qwen3", "gemma3_text"):
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps, gemma)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps, gemma)
        q = apply_rope(q, pos_t, inv_l)
        k = apply_rope(k, pos_t, inv_l)
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        outs = []
        for a, b in bounds:
            n = b - a
            att = torch.einsum("thd,shd->hts", q[a:b], k[a:b]) * scale
            causal = torch.ones(n, n, dtype=torch.bool).tril()
            if sliding:
                causal = causal & ~torch.ones(n, n, dtype=torch.bool).tril(-window)
            att = att.masked_fill(~causal[None], float("-inf")).softmax(-1)
            outs.append(torch.einsum("hts,shd->thd", att, v[a:b]))
        o = torch.cat(outs).reshape(T, H * D)
        if gemma:
            a_out = linear(o, W[p + "self_attn.o_proj.weight"], None, lr("o_proj"), sc)
            x = x + rms_norm(a_out, W[p + "post_attention_layernorm.weight"], eps, True)
            h = rms_norm(x, W[p + "pre_feedforward_layernorm.weight"], eps, True)
            g = linear(h, W[p + "mlp.gate_proj.weight"], None, lr("gate_proj"), sc)
            u = linear(h, W[p + "mlp.up_proj.weight"], None, lr("up_proj"), sc)
            m = linear(torch.nn.functional.gelu(g, approximate="tanh") * u, W[p + "mlp.down_proj.weight"], None,
                       lr("down_proj"), sc)
            x = x + rms_norm(m, W[p + "post_feedforward_layernorm.weight"], eps, True)
            continue
        # o_proj's bias (attention_bias) and the MLP's (mlp_bias): absent but in those cases.
        x = x + linear(o, W[p + "self_attn.o_proj.weight"], bias("o_proj"), lr("o_proj"), sc)
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        mb = (lambda n: W.get(p + "mlp.%s.bias" % n))
        g = linear(h, W[p + "mlp.gate_proj.weight"], mb("gate_proj"), lr("gate_proj"), sc)
        u = linear(h, W[p + "mlp.up_proj.weight"], mb("up_proj"), lr("up_proj"), sc)
        x = x + linear(torch.nn.functional.silu(g) * u, W[p + "mlp.down_proj.weight"], mb("down_proj"), lr("down_proj"),
                       sc)
    x = rms_norm(x, W["model.norm.weight"], eps, gemma)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", gemma) else W["lm_head.weight"]
    return x @ head.T  # [T, V]


# ---------------------------------------------------------------- cases

CASES = {
    # Gemma 3: GQA 4:2, head_dim 16 != hidden/heads 12, query_pre_attn_scalar 24 != head_dim,
    # sliding_window_pattern 2 (layers 0 and 2 slide, window 4 < both sequences, local RoPE base
    # 10000; layer 1 full, rope_theta 1e6 with linear rope scaling factor 2, as the larger Gemma 3
    # checkpoints scale their full layers), tie_word_embeddings absent (Gemma's default: tied),
    # bf16 on disk, LoRA r=4 on all 7 projections.
    "gemma3": dict(
        seed=1003,
        config=dict(architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", vocab_size=331, hidden_size=48,
                    intermediate_size=80, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=16, query_pre_attn_scalar=24, max_position_embeddings=512, rms_norm_eps=1e-6,
                    rope_theta=1000000.0, rope_local_base_freq=10000.0,
                    rope_scaling=dict(rope_type="linear", factor=2.0), sliding_window=4,
                    sliding_window_pattern=2, hidden_activation="gelu_pytorch_tanh", attention_bias=False,
                    attn_logit_softcapping=None, final_logit_softcapping=None, torch_dtype="bfloat16",
                    bos_token_id=2, eos_token_id=[1, 106], pad_token_id=0),
        dtype=torch.bfloat16,
        lora=dict(r=4, lora_alpha=8, use_rslora=False,
                  target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
        seqs=[11, 7], start_pos=[0, 3],
    ),
    # GQA ratio 2, llama3 rope scaling whose wavelength bands all occur at head_dim 16.
    "llama": dict(
        seed=1000,
        config=dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=397, hidden_size=64,
                    intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                    max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=500000.0,
                    rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                      original_max_position_embeddings=64),
                    tie_word_embeddings=False, attention_bias=False, hidden_act="silu", torch_dtype="float32",
                    bos_token_id=256, eos_token_id=257),
        dtype=torch.float32,
        lora=dict(r=4, lora_alpha=8, use_rslora=False,
                  target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
        seqs=[9, 7], start_pos=[0, 40],
    ),
    # Llama with attention_bias and mlp_bias (biases on q, k, v, o, gate, up and down), head_dim 12 !=
    # hidden/heads 10, rope_theta absent (LlamaConfig's 10000) with linear rope scaling factor 4 in the
    # legacy "type" spelling (every layer), tied embeddings, f32 on disk; rsLoRA r=4 alpha 6 on all 7
    # projections of layer 1 only (PEFT layers_to_transform), so layer 0 is the base model's.
    "llama_bias": dict(
        seed=1005,
        config=dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=263, hidden_size=40,
                    intermediate_size=72, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=12, max_position_embeddings=256, rms_norm_eps=1e-5,
                    rope_scaling=dict(type="linear", factor=4.0), tie_word_embeddings=True, attention_bias=True,
                    mlp_bias=True, hidden_act="silu", torch_dtype="float32", bos_token_id=1, eos_token_id=2),
        dtype=torch.float32,
        lora=dict(r=4, lora_alpha=6, use_rslora=True, layers_to_transform=[1],
                  target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
        seqs=[6, 9, 5], start_pos=[0, 0, 70],
    ),
    # Llama 3's rope scaling at positions beyond original_max_position_embeddings 32: a 40-token
    # sequence from position 0 (decodable from an empty KV cache) and one from position 200; at
    # rope_theta 10000 and head_dim 16 the wavelengths 6.3 (< 32/4: kept), 19.9 (between: smoothed) and
    # 63 and up (> 32/1: divided by factor 8) fall in all three bands. GQA 2:1, untied lm_head, bf16 on
    # disk, LoRA r=2 on q, v and down.
    "llama3_long": dict(
        seed=1006,
        config=dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=211, hidden_size=32,
                    intermediate_size=48, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                    max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=10000.0,
                    rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                      original_max_position_embeddings=32),
                    tie_word_embeddings=False, attention_bias=False, hidden_act="silu", torch_dtype="bfloat16",
                    bos_token_id=1, eos_token_id=2),
        dtype=torch.bfloat16,
        lora=dict(r=2, lora_alpha=4, use_rslora=False, target_modules=["q_proj", "v_proj", "down_proj"]),
        seqs=[40, 6], start_pos=[0, 200],
    ),
    # Mistral 7B v0.1's shape of attention: every layer slides, window 3 < all three sequences, GQA 4:1,
    # rope_theta 1e6, untied lm_head, no biases, bf16 on disk, LoRA r=4 on all 7 projections; the third
    # sequence starts at position 20 (RoPE turns by position; the window counts keys back from the query).
    "mistral": dict(
        seed=1004,
        config=dict(architectures=["MistralForCausalLM"], model_type="mistral", vocab_size=283, hidden_size=64,
                    intermediate_size=88, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                    max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=1000000.0, sliding_window=3,
                    tie_word_embeddings=False, hidden_act="silu", attention_dropout=0.0, torch_dtype="bfloat16",
                    bos_token_id=1, eos_token_id=2),
        dtype=torch.bfloat16,
        lora=dict(r=4, lora_alpha=8, use_rslora=False,
                  target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
        seqs=[8, 5, 6], start_pos=[0, 0, 20],
    ),
    # GQA ratio 7, q/k/v bias, tied embeddings, bf16 on disk, rsLoRA on attention only.
    "qwen2": dict(
        seed=1001,
        config=dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", vocab_size=311, hidden_size=56,
                    intermediate_size=80, num_hidden_layers=2, num_attention_heads=7, num_key_value_heads=1,
                    max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                    tie_word_embeddings=True, hidden_act="silu", torch_dtype="bfloat16",
                    bos_token_id=257, eos_token_id=258),
        dtype=torch.bfloat16,
        lora=dict(r=2, lora_alpha=4, use_rslora=True, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]),
        seqs=[5, 6, 4], start_pos=[0, 0, 3],
    ),
    # GQA ratio 1, per-head q/k norm, head_dim 16 != hidden/heads = 12, f16 on disk, odd rank.
    "qwen3": dict(
        seed=1002,
        config=dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=450, hidden_size=48,
                    intermediate_size=72, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
                    head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0,
                    rope_scaling=None, tie_word_embeddings=False, attention_bias=False, hidden_act="silu",
                    torch_dtype="float16", bos_token_id=257, eos_token_id=258),
        dtype=torch.float16,
        lora=dict(r=3, lora_alpha=6, use_rslora=False, target_modules=["q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"]),
        seqs=[13], start_pos=[0],
    ),
}


def random_weights(cfg, dtype, g):
    C = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or C // H
    I = cfg["intermediate_size"]
    V = cfg["vocab_size"]

    def rnd(*shape, std=0.02 * 5):
        return torch.randn(*shape, generator=g, dtype=torch.float32) * std

    gemma = cfg["model_type"] == "gemma3_text"

    def norm_w(n):
        # Gemma stores the norm weight as an offset from 1.
        return (0.0 if gemma else 1.0) + 0.1 * torch.randn(n, generator=g)

    # A tied embedding doubles as the output layer: keep it small enough that the
    # next-token distribution is not one-hot (entropy and its gradient stay informative).
    emb_std = 0.15 if cfg.get("tie_word_embeddings", gemma) else 0.5
    w = {"model.embed_tokens.weight": rnd(V, C, std=emb_std), "model.norm.weight": norm_w(C)}
    if not cfg.get("tie_word_embeddings", gemma):
        w["lm_head.weight"] = rnd(V, C, std=0.2)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        w[p + "input_layernorm.weight"] = norm_w(C)
        w[p + "post_attention_layernorm.weight"] = norm_w(C)
        w[p + "self_attn.q_proj.weight"] = rnd(H * D, C, std=1 / math.sqrt(C))
        w[p + "self_attn.k_proj.weight"] = rnd(KV * D, C, std=1 / math.sqrt(C))
        w[p + "self_attn.v_proj.weight"] = rnd(KV * D, C, std=1 / math.sqrt(C))
        w[p + "self_attn.o_proj.weight"] = rnd(C, H * D, std=1 / math.sqrt(H * D))
        if cfg["model_type"] == "qwen2":
            w[p + "self_attn.q_proj.bias"] = rnd(H * D, std=0.1)
            w[p + "self_attn.k_proj.bias"] = rnd(KV * D, std=0.1)
            w[p + "self_attn.v_proj.bias"] = rnd(KV * D, std=0.1)
        if cfg["model_type"] in ("llama", "qwen3") and cfg.get("attention_bias"):
            # LlamaAttention / Qwen3Attention: bias=config.attention_bias on q, k, v and o.
            w[p + "self_attn.q_proj.bias"] = rnd(H * D, std=0.1)
            w[p + "self_attn.k_proj.bias"] = rnd(KV * D, std=0.1)
            w[p + "self_attn.v_proj.bias"] = rnd(KV * D, std=0.1)
            w[p + "self_attn.o_proj.bias"] = rnd(C, std=0.1)
        if cfg["model_type"] in ("qwen3", "gemma3_text"):
            w[p + "self_attn.q_norm.weight"] = norm_w(D)
            w[p + "self_attn.k_norm.weight"] = norm_w(D)
        if gemma:
            w[p + "pre_feedforward_layernorm.weight"] = norm_w(C)
            w[p + "post_feedforward_layernorm.weight"] = norm_w(C)
        w[p + "mlp.gate_proj.weight"] = rnd(I, C, std=1 / math.sqrt(C))
        w[p + "mlp.up_proj.weight"] = rnd(I, C, std=1 / math.sqrt(C))
        w[p + "mlp.down_proj.weight"] = rnd(C, I, std=1 / math.sqrt(I))
        if cfg["model_type"] == "llama" and cfg.get("mlp_bias"):
            # LlamaMLP: bias=config.mlp_bias on gate, up and down.
            w[p + "mlp.gate_proj.bias"] = rnd(I, std=0.1)
            w[p + "mlp.up_proj.bias"] = rnd(I, std=0.1)
            w[p + "mlp.down_proj.bias"] = rnd(C, std=0.1)
    return {k: v.to(dtype) for k, v in w.items()}


def module_dims(cfg, mod):
    C = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or C // H
    I = cfg["intermediate_size"]
    return {"q_proj": (C, H * D), "k_proj": (C, KV * D), "v_proj": (C, KV * D), "o_proj": (H * D, C),
            "gate_proj": (C, I), "up_proj": (C, I), "down_proj": (I, C)}[mod]


def make_cases(outdir):
    for name, case in sorted(CASES.items()):
        g = torch.Generator().manual_seed(case["seed"])
        cfg = case["config"]
        d = os.path.join(outdir, name)
        os.makedirs(os.path.join(d, "model"), exist_ok=True)
        os.makedirs(os.path.join(d, "adapter"), exist_ok=True)
        write_json(os.path.join(d, "model", "config.json"), cfg)
        write_safetensors(os.path.join(d, "model", "model.safetensors"), random_weights(cfg, case["dtype"], g),
                          {"format": "pt"})
        lc = case["lora"]
        ad = {}
        for l in lc.get("layers_to_transform") or range(cfg["num_hidden_layers"]):
            for mod in lc["target_modules"]:
                sub = "self_attn" if mod in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
                p = "base_model.model.model.layers.%d.%s.%s." % (l, sub, mod)
                fin, fout = module_dims(cfg, mod)
                ad[p + "lora_A.weight"] = torch.randn(lc["r"], fin, generator=g) / math.sqrt(fin)
                ad[p + "lora_B.weight"] = torch.randn(fout, lc["r"], generator=g) * 0.1
        acfg = dict(peft_type="LORA", task_type="CAUSAL_LM", base_model_name_or_path="../model", r=lc["r"],
                    lora_alpha=lc["lora_alpha"], lora_dropout=0.0, target_modules=lc["target_modules"],
                    bias="none", use_rslora=lc["use_rslora"], use_dora=False, modules_to_save=None,
                    fan_in_fan_out=False, inference_mode=True)
        if lc.get("layers_to_transform"):
            # PEFT then has LoRA tensors on those layers only; the others are the base model's.
            acfg["layers_to_transform"] = lc["layers_to_transform"]
        write_json(os.path.join(d, "adapter", "adapter_config.json"), acfg)
        write_safetensors(os.path.join(d, "adapter", "adapter_model.safetensors"), ad, {"format": "pt"})
        V = cfg["vocab_size"]
        ids, pos, starts = [], [], []
        for n, p0 in zip(case["seqs"], case["start_pos"]):
            starts.append(len(ids))
            ids += torch.randint(0, V, (n,), generator=g).tolist()
            pos += list(range(p0, p0 + n))
        targets = torch.randint(0, V, (len(ids),), generator=g).tolist()
        weights = [round(x, 3) for x in (torch.rand(len(ids), generator=g) * 2 - 0.5).tolist()]
        write_json(os.path.join(d, "inputs.json"), dict(input_ids=ids, position_ids=pos, seq_starts=starts,
                                                        targets=targets, weights=weights))


def golden(casedir):
    with open(os.path.join(casedir, "model", "config.json")) as f:
        cfg = json.load(f)
    stored = {}
    W = read_safetensors(os.path.join(casedir, "model", "model.safetensors"), stored)
    emb_dt = stored["model.embed_tokens.weight"]
    with open(os.path.join(casedir, "adapter", "adapter_config.json")) as f:
        acfg = json.load(f)
    lora = Lora(read_safetensors(os.path.join(casedir, "adapter", "adapter_model.safetensors")), acfg)
    with open(os.path.join(casedir, "inputs.json")) as f:
        inp = json.load(f)
    ids, pos, starts = inp["input_ids"], inp["position_ids"], inp["seq_starts"]
    tg = torch.tensor(inp["targets"])
    wt = torch.tensor(inp["weights"], dtype=torch.float64)

    logits = forward(cfg, W, ids, pos, starts, lora, emb_dt)
    lsm = logits.log_softmax(-1)
    logprobs = lsm.gather(1, tg[:, None])[:, 0]
    entropy = -(lsm.exp() * lsm).sum(-1)
    loss = (wt * logprobs).sum()
    names = sorted(lora.params)
    grads = torch.autograd.grad(loss, [lora.params[n] for n in names])
    with torch.no_grad():
        base = forward(cfg, W, ids, pos, starts, None, emb_dt)

    def rows(t):
        # 12 significant digits: far below the float32 tolerances the Go tests use.
        t = t.detach()
        if t.dim() == 0:
            return float("%.12g" % t.item())
        return [rows(x) for x in t] if t.dim() > 1 else [float("%.12g" % x) for x in t.tolist()]

    out = dict(
        torch_version=torch.__version__,
        logits=rows(logits), base_logits=rows(base), logprobs=rows(logprobs), entropy=rows(entropy),
        loss=rows(loss), grads={n: rows(g_) for n, g_ in zip(names, grads)},
    )
    write_json(os.path.join(casedir, "golden.json"), out)


BENCH_SHAPES = {
    # train/model's BenchmarkTrainStep shape.
    "tiny": dict(model_type="qwen2", vocab_size=4096, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                 num_attention_heads=8, num_key_value_heads=4, rms_norm_eps=1e-6, rope_theta=1e6, rope_scaling=None,
                 tie_word_embeddings=False),
    # Qwen2.5-0.5B.
    "05b": dict(model_type="qwen2", vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                num_attention_heads=14, num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=1e6, rope_scaling=None,
                tie_word_embeddings=True),
}


def bench_flags(args, defaults):
    """Parses --name value pairs into a copy of defaults (values keep the defaults' types)."""
    out = dict(defaults)
    if len(args) % 2:
        raise SystemExit("bench: flags come as --name value pairs: %r" % (args,))
    for i in range(0, len(args), 2):
        k = args[i].lstrip("-").replace("-", "_")
        if not args[i].startswith("--") or k not in defaults:
            raise SystemExit("bench: unknown flag %s (known: %s)" % (args[i], ", ".join(sorted(defaults))))
        out[k] = type(defaults[k])(args[i + 1])
    return out


def bench_setup(shape, dtype, g):
    cfg = dict(BENCH_SHAPES[shape])
    W = random_weights(cfg, dtype, g)
    return cfg, W


def bench_train(args=()):
    """Times LoRA training steps of this reference (float32, autograd, full
    logits) on a bench shape (default: tiny, the shape of train/model's
    BenchmarkTrainStep: hidden 256, 4 layers, 8/4 heads, MLP 688, vocab 4096),
    batch x seq tokens, LoRA r8 on all projections, AdamW on the LoRA
    parameters. Not golden values: a yardstick. --autocast 1 runs the
    forward under torch.autocast("cpu", dtype=torch.bfloat16) over bfloat16
    base weights (the bf16 compute rows). The last line is
    BENCH {json} for train/internal/modelbench."""
    import contextlib
    import time
    f = bench_flags(args, dict(shape="tiny", batch=8, seq=256, steps=int(os.environ.get("BENCH_STEPS", "3")),
                               threads=int(os.environ.get("BENCH_THREADS", "2")), autocast=0))
    ac = f["autocast"] != 0
    torch.set_num_threads(f["threads"])
    g = torch.Generator().manual_seed(0)
    cfg, W = bench_setup(f["shape"], torch.bfloat16 if ac else torch.float32, g)
    V = cfg["vocab_size"]
    mods = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    ad = {}
    for l in range(cfg["num_hidden_layers"]):
        for mod in mods:
            sub = "self_attn" if mod in mods[:4] else "mlp"
            p = "base_model.model.model.layers.%d.%s.%s." % (l, sub, mod)
            fin, fout = module_dims(cfg, mod)
            ad[p + "lora_A.weight"] = torch.randn(8, fin, generator=g) / math.sqrt(fin)
            ad[p + "lora_B.weight"] = torch.zeros(fout, 8)
    lora = Lora(ad, dict(r=8, lora_alpha=16))
    opt = torch.optim.AdamW(list(lora.params.values()), lr=1e-4)
    T, B, steps = f["seq"], f["batch"], f["steps"]
    ids = torch.randint(0, V, (B * T,), generator=g).tolist()
    tg = torch.randint(0, V, (B * T,), generator=g)
    pos = [i % T for i in range(B * T)]
    starts = [i * T for i in range(B)]
    times = []
    for step in range(steps + 1):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16) if ac else contextlib.nullcontext():
            logits = forward_f32(cfg, W, ids, pos, starts, lora)
        lp = logits.float().log_softmax(-1).gather(1, tg[:, None])[:, 0]
        loss = -lp.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        del logits, lp, loss
        times.append(time.perf_counter() - t0)
    per = sum(times[1:]) / steps
    print("torch %s threads=%d: %.3f s/step, %.0f tokens/s (first step %.3f s)" % (
        torch.__version__, torch.get_num_threads(), per, B * T / per, times[0]))
    print("BENCH " + json.dumps(dict(kind="train", shape=f["shape"], batch=B, seq=T, steps=steps, autocast=ac,
                                     seconds_per_step=per, tokens_per_s=B * T / per, first_step_s=times[0],
                                     torch=torch.__version__, threads=torch.get_num_threads())))


def bench_decode(args=()):
    """Times greedy decoding with a KV cache: a prompt of --prompt tokens per
    sequence, then --tokens steps of one new token for each of --batch
    sequences, weights and compute in float32 or bfloat16 (--dtype), no
    adapter. The last line is BENCH {json} for train/internal/modelbench."""
    import time
    f = bench_flags(args, dict(shape="05b", batch=1, prompt=16, tokens=16, dtype="f32",
                               threads=int(os.environ.get("BENCH_THREADS", "2"))))
    torch.set_num_threads(f["threads"])
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[f["dtype"]]
    g = torch.Generator().manual_seed(0)
    cfg, W = bench_setup(f["shape"], dt, g)
    C = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or C // H
    eps = cfg["rms_norm_eps"]
    inv = inv_freq(cfg, D).to(torch.float32)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    B = f["batch"]
    cache = [[None, None] for _ in range(cfg["num_hidden_layers"])]

    def step(ids, start):
        # ids [B, T] appended at positions start … start+T-1 of every sequence.
        Bn, T = ids.shape
        pos = torch.arange(start, start + T)
        x = W["model.embed_tokens.weight"][ids]  # [B, T, C]
        causal = torch.ones(T, start + T, dtype=torch.bool).tril(start)
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
            q = linear(h, W[p + "self_attn.q_proj.weight"], W.get(p + "self_attn.q_proj.bias"))
            k = linear(h, W[p + "self_attn.k_proj.weight"], W.get(p + "self_attn.k_proj.bias"))
            v = linear(h, W[p + "self_attn.v_proj.weight"], W.get(p + "self_attn.v_proj.bias"))
            q = apply_rope(q.view(Bn * T, H, D), pos.repeat(Bn), inv).to(dt).view(Bn, T, H, D)
            k = apply_rope(k.view(Bn * T, KV, D), pos.repeat(Bn), inv).to(dt).view(Bn, T, KV, D)
            v = v.view(Bn, T, KV, D)
            kc, vc = cache[l]
            kc = k if kc is None else torch.cat([kc, k], 1)
            vc = v if vc is None else torch.cat([vc, v], 1)
            cache[l] = [kc, vc]
            rep = H // KV
            kr = kc.repeat_interleave(rep, dim=2)
            vr = vc.repeat_interleave(rep, dim=2)
            att = torch.einsum("bthd,bshd->bhts", q, kr) / math.sqrt(D)
            att = att.masked_fill(~causal[None, None], float("-inf")).softmax(-1)
            o = torch.einsum("bhts,bshd->bthd", att, vr).reshape(Bn, T, H * D)
            x = x + linear(o, W[p + "self_attn.o_proj.weight"])
            h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
            gt = linear(h, W[p + "mlp.gate_proj.weight"])
            u = linear(h, W[p + "mlp.up_proj.weight"])
            x = x + linear(torch.nn.functional.silu(gt) * u, W[p + "mlp.down_proj.weight"])
        x = rms_norm(x[:, -1], W["model.norm.weight"], eps)
        return (x @ head.T).argmax(-1)  # [B] greedy next tokens

    V = cfg["vocab_size"]
    with torch.no_grad():
        prompt = torch.randint(0, V, (B, f["prompt"]), generator=g)
        t0 = time.perf_counter()
        nxt = step(prompt, 0)
        prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(f["tokens"]):
            nxt = step(nxt[:, None], f["prompt"] + i)
        dur = time.perf_counter() - t0
    tps = B * f["tokens"] / dur
    print("torch %s threads=%d decode %s batch %d: %.2f tokens/s (prefill %.3f s)" % (
        torch.__version__, torch.get_num_threads(), f["dtype"], B, tps, prefill))
    print("BENCH " + json.dumps(dict(kind="decode", shape=f["shape"], batch=B, dtype=f["dtype"], tokens=f["tokens"],
                                     tokens_per_s=tps, prefill_s=prefill, torch=torch.__version__,
                                     threads=torch.get_num_threads())))


def forward_f32(cfg, W, ids, pos, seq_starts, lora, embed_dtype=torch.float32):
    # The reference forward builds its RoPE tables in float64; run it in
    # float32 by casting those inputs, the rest follows the weights' dtype.
    global inv_freq
    f64 = inv_freq
    try:
        inv_freq = lambda c, d: f64(c, d).to(torch.float32)
        return forward(cfg, W, ids, pos, seq_starts, lora, embed_dtype)
    finally:
        inv_freq = f64


def main(argv):
    torch.set_num_threads(1)
    if len(argv) >= 2 and argv[1] == "bench-train":
        bench_train(argv[2:])
    elif len(argv) >= 2 and argv[1] == "bench-decode":
        bench_decode(argv[2:])
    elif len(argv) == 3 and argv[1] == "make-cases":
        make_cases(argv[2])
    elif len(argv) == 3 and argv[1] == "golden":
        golden(argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
