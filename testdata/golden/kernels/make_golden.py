"""Golden values for Hone's kernels, written with PyTorch ops only.

Run from the repository root:

    /usr/bin/python3 testdata/golden/kernels/make_golden.py testdata/golden/kernels

It writes golden.json (inputs and expected outputs, float32 values as JSON
numbers) and provenance.json (this command, torch version, sha256 of
golden.json). The Go test (kernels/kerneltest.RunGolden) rereads both.

Every op is written independently of the Go code, the way Hugging Face
transformers computes it (rotate_half RoPE, llama3 inverse-frequency rewrite,
attention as matmul + causal mask + softmax with repeat_interleave for GQA,
log_softmax over full logits) or with the library itself (torch.optim.AdamW).
Gradients come from autograd.
"""
import hashlib
import json
import math
import os
import sys

import torch

torch.manual_seed(0)
g = torch.Generator().manual_seed(20261202)


def randn(*shape, scale=1.0):
    return (torch.randn(*shape, generator=g, dtype=torch.float32) * scale)


def flat(t):
    return [float(x) for x in t.detach().reshape(-1).to(torch.float32).tolist()]


def llama3_inv_freq(theta, dim, factor, low, high, orig):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    low_wl, high_wl = orig / low, orig / high
    wl = 2 * math.pi / inv
    scaled = torch.where(wl > low_wl, inv / factor, inv)
    smooth = (orig / wl - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wl < high_wl) * ~(wl > low_wl)
    return torch.where(medium, smoothed, scaled)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_case():
    N, H, D, R = 11, 3, 16, 12
    cfg = dict(theta=10000.0, head_dim=D, rotary_dim=R, factor=8.0, low=1.0, high=4.0, orig=32.0)
    inv = llama3_inv_freq(cfg["theta"], R, cfg["factor"], cfg["low"], cfg["high"], cfg["orig"])
    pos = torch.tensor([0, 1, 2, 3, 5, 8, 13, 40, 0, 1, 2], dtype=torch.int64)  # two packed sequences
    x = randn(N, H, D).requires_grad_(True)
    freqs = pos[:, None].float() * inv[None, :]            # [N, R/2], float32 like HF
    emb = torch.cat((freqs, freqs), dim=-1)                 # [N, R]
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    xr, xp = x[..., :R], x[..., R:]
    out = torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)
    dout = randn(N, H, D)
    (dx,) = torch.autograd.grad(out, x, dout)
    return dict(config=cfg, N=N, H=H, D=D, pos=pos.tolist(), inp=flat(x), inv_freq=flat(inv),
                out=flat(out), dout=flat(dout), dinp=flat(dx))


def attention_case():
    lens, H, KVH, D = [5, 1, 7], 6, 2, 8
    N = sum(lens)
    scale = 1 / math.sqrt(D)
    q = randn(N, H, D).requires_grad_(True)
    k = randn(N, KVH, D).requires_grad_(True)
    v = randn(N, KVH, D).requires_grad_(True)
    outs, lses, off = [], [], 0
    for T in lens:
        qs = q[off:off + T].transpose(0, 1)                                  # [H, T, D]
        ks = k[off:off + T].transpose(0, 1).repeat_interleave(H // KVH, 0)  # [H, T, D]
        vs = v[off:off + T].transpose(0, 1).repeat_interleave(H // KVH, 0)
        s = (qs @ ks.transpose(1, 2)) * scale                                # [H, T, T]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        s = s.masked_fill(mask, float("-inf"))
        lses.append(torch.logsumexp(s, dim=-1).transpose(0, 1))              # [T, H]
        outs.append((torch.softmax(s, dim=-1) @ vs).transpose(0, 1))         # [T, H, D]
        off += T
    out, lse = torch.cat(outs), torch.cat(lses)
    dout = randn(N, H, D)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout)
    seq_off = [0]
    for T in lens:
        seq_off.append(seq_off[-1] + T)
    return dict(N=N, H=H, KVH=KVH, D=D, scale=scale, seq_off=seq_off, q=flat(q), k=flat(k), v=flat(v),
                out=flat(out), lse=flat(lse), dout=flat(dout), dq=flat(dq), dk=flat(dk), dv=flat(dv))


def logprob_case():
    N, C, V, chunk = 6, 16, 300, 64  # V not a multiple of chunk
    h = randn(N, C).requires_grad_(True)
    w = randn(V, C, scale=0.5).requires_grad_(True)
    targets = torch.tensor([3, 299, -1, 0, 128, 77])
    logp = torch.log_softmax(h @ w.t(), dim=-1)  # [N, V]
    lp = torch.where(targets >= 0, logp.gather(1, targets.clamp(min=0)[:, None])[:, 0], torch.zeros(N))
    ent = -(logp.exp() * logp).sum(-1)
    lse = torch.logsumexp(h @ w.t(), dim=-1)
    dlp, dent = randn(N), randn(N)
    dh, dw = torch.autograd.grad((lp * dlp).sum() + (ent * dent).sum(), (h, w))
    return dict(N=N, C=C, V=V, chunk=chunk, hidden=flat(h), weight=flat(w), targets=targets.tolist(),
                logprob=flat(lp), entropy=flat(ent), lse=flat(lse), dlogprob=flat(dlp), dentropy=flat(dent),
                dhidden=flat(dh), dweight=flat(dw))


def adamw_case():
    n, steps = 37, 3
    hp = dict(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1)
    p = torch.nn.Parameter(randn(n))
    p0 = p.detach().clone()
    opt = torch.optim.AdamW([p], lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"],
                            weight_decay=hp["weight_decay"])
    grads = []
    for _ in range(steps):
        gr = randn(n)
        grads.append(flat(gr))
        p.grad = gr.clone()
        opt.step()
    st = opt.state[p]
    return dict(n=n, steps=steps, hparams=hp, param0=flat(p0), grads=grads, param=flat(p),
                m=flat(st["exp_avg"]), v=flat(st["exp_avg_sq"]))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    golden = dict(rope_llama3=rope_case(), attention_gqa=attention_case(),
                  logprob_chunked=logprob_case(), adamw=adamw_case())
    data = json.dumps(golden, separators=(",", ":"), sort_keys=True).encode()
    path = os.path.join(out_dir, "golden.json")
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    prov = dict(command="/usr/bin/python3 testdata/golden/kernels/make_golden.py testdata/golden/kernels",
                torch=torch.__version__, python=sys.version.split()[0],
                files={"golden.json": hashlib.sha256(data).hexdigest()})
    with open(os.path.join(out_dir, "provenance.json"), "w") as f:
        json.dump(prov, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
