"""Golden values for train/grpo.Loss, computed with PyTorch autograd.

An independent implementation of the GRPO loss family on padded [I, Tmax]
tensors (the TRL layout), in float64 on float32-representable inputs:
loss terms and d loss / d logprob for each variant. The ART knobs
(importance-sampling levels average and geometric_average, the sequence
ratio per history, max_negative_advantage_importance_sampling_weight,
mask_prob_ratio, kimi_k2_tau, truncated importance sampling without
precomputed logprobs, and the per-row token mean with trajectory weights)
restate OpenPipe ART's src/art/loss.py (loss_fn, commit 13d6b609) in the
same padded layout; kl_penalty_coef and kl_penalty_source restate the
later loss_fn that has them (the one beside src/art/types.py at 0d73242):
the advantage shift coef·(mean k − k_t) with k_t = sg(ℓ^src_t − ℓ^ref_t),
the mean over every assistant token the call sees (sum / (count + 1e-18);
all four trajectories here, one packed row): the sequence ratio is a mean of the log ratio per
sequence id (ART's group_aggregate over group_ids), each step in the order
loss_fn applies it. Run from the repository root:

    /usr/bin/python3 train/grpo/testdata/golden/make_golden.py

It rewrites golden.json and provenance.json (command line, torch version,
sha256 of this script and of golden.json) beside itself.
"""
import hashlib
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

g = torch.Generator().manual_seed(20261202)
lengths = [2, 4, 3, 1]
I, T = len(lengths), max(lengths)


def f32(x):
    return x.float().double()


mask = torch.zeros(I, T, dtype=torch.float64)
for i, n in enumerate(lengths):
    mask[i, :n] = 1
lp = f32(-3 * torch.rand(I, T, generator=g))
old = f32(lp + 0.4 * torch.randn(I, T, generator=g))
sampler = f32(old + 0.5 * torch.randn(I, T, generator=g))
ref = f32(lp + 0.6 * torch.randn(I, T, generator=g))
adv = torch.tensor([1.5, -0.7, 0.4, -2.0], dtype=torch.float64)
old_nan = torch.zeros(I, T, dtype=torch.bool)
old_nan[1, 2] = True  # unknown sampling logprob: on-policy

# Histories: trajectory 1 is two histories of 2 tokens, trajectory 2 one of
# 1 and one of 2; the others one each. hist[i, t] is a global history id.
hist_lengths = [[2], [2, 2], [1, 2], [1]]
hist = torch.zeros(I, T, dtype=torch.long)
h = 0
for i, hl in enumerate(hist_lengths):
    t = 0
    for n_h in hl:
        hist[i, t:t + n_h] = h
        h, t = h + 1, t + n_h
H = h
item = torch.arange(I).unsqueeze(1).expand(I, T)
# ART's trajectory weights (preprocessing/pack.py): 1/(n_i + 1e-6), then
# divided by their mean over all assistant tokens.
w_raw = torch.tensor([1 / (n + 1e-6) for n in lengths], dtype=torch.float64)
weight = w_raw / ((w_raw.unsqueeze(1) * mask).sum() / mask.sum())


def seq_mean(x, ids, n_ids):
    """Mean of x over the masked tokens of each id, broadcast back."""
    s = torch.zeros(n_ids, dtype=x.dtype).index_add(0, ids[mask.bool()], x[mask.bool()])
    c = torch.zeros(n_ids, dtype=x.dtype).index_add(0, ids[mask.bool()], torch.ones_like(x[mask.bool()]))
    return (s / c)[ids]


def loss_fn(c, lp):
    o = torch.where(old_nan, lp.detach(), old)
    delta = (lp - o) * mask
    n = mask.sum(1)
    ratio = torch.exp(delta)
    if c["level"] != "token":
        ids, n_ids = (hist, H) if c.get("ratio_per_history") else (item, I)
        seq = torch.exp(seq_mean(delta, ids, n_ids))
        if c["level"] == "sequence":
            ratio = seq
        elif c["level"] == "average":
            ratio = (ratio + seq) / 2
        else:
            ratio = ratio**0.5 * seq**0.5
    lo, hi = 1 - c["epsilon"], 1 + c["epsilon_high"]
    if c.get("max_is_weight", 0) > 0:
        ratio = torch.clamp(ratio, max=c["max_is_weight"])
    if c.get("mask_prob_ratio"):
        ratio = torch.where((ratio > lo) & (ratio < hi), ratio, torch.zeros_like(ratio))
    A = adv.unsqueeze(1).expand(I, T)
    if c.get("kimi_k2_tau", 0) != 0:
        A = A - c["kimi_k2_tau"] * delta.detach()
    kl_ref = torch.zeros((), dtype=torch.float64)
    if c.get("kl_penalty_coef", 0) > 0:
        src = o.detach() if c.get("kl_penalty_source") == "sample" else lp.detach()
        k_pen = (src - ref).detach() * mask
        kl_ref = k_pen.sum() / (mask.sum() + 1e-18)
        A = A + c["kl_penalty_coef"] * (kl_ref - k_pen) * mask
    clipped = torch.clamp(ratio, lo, hi)
    if c["loss"] == "art":
        l = -clipped.detach() * A * lp
    else:
        l = -torch.min(ratio * A, clipped * A)
    if c["tis"] > 0:
        if c.get("tis_mode") == "sampler":
            w = torch.clamp(ratio, max=c["tis"]).detach()
        else:
            w = torch.clamp(torch.exp(old - sampler), max=c["tis"])
            w = torch.where(old_nan, torch.ones_like(w), w).detach()
        l = l * w
    d = ref - lp
    k = torch.exp(d) - d - 1
    if c["norm"] == "sequence":
        agg = lambda x: ((x * mask).sum(1) / n).sum() / I
    elif c["norm"] == "tokens":
        agg = lambda x: (x * mask).sum() / mask.sum()
    elif c["norm"] == "art":
        agg = lambda x: (x * weight.unsqueeze(1) * mask).sum() / (mask.sum() + 1e-6)
    else:
        agg = lambda x: (x * mask).sum() / (I * c["norm_constant"])
    policy, kl = agg(l), agg(k)
    if c["beta"] == 0:
        kl = torch.zeros((), dtype=torch.float64)  # Hone runs no reference pass without a KL term
    return policy, kl, policy + c["beta"] * kl, kl_ref


base = dict(loss="art", epsilon=1.0, epsilon_high=4.0, level="token", norm="sequence", norm_constant=8.0, beta=0.0, tis=0.0)
cases = [
    ("art default", {}),
    ("art narrow clip", dict(epsilon=0.2, epsilon_high=0.28)),
    ("art sequence tokens", dict(level="sequence", norm="tokens", epsilon=0.1, epsilon_high=0.1)),
    ("ppo", dict(loss="ppo", epsilon=0.2, epsilon_high=0.2)),
    ("ppo clip-higher tokens", dict(loss="ppo", epsilon=0.2, epsilon_high=0.28, norm="tokens")),
    ("gspo", dict(loss="ppo", level="sequence", epsilon=0.1, epsilon_high=0.15)),
    ("dr grpo", dict(loss="ppo", epsilon=0.2, epsilon_high=0.2, norm="constant")),
    ("ppo kl", dict(loss="ppo", epsilon=0.2, epsilon_high=0.2, beta=0.3)),
    ("art kl tis", dict(beta=0.1, tis=1.5)),
    # ART's further knobs (src/art/loss.py).
    ("art average", dict(level="average", epsilon=0.2, epsilon_high=0.28)),
    ("art geometric per history", dict(level="geometric_average", ratio_per_history=True, epsilon=0.2, epsilon_high=0.28)),
    ("ppo average", dict(loss="ppo", level="average", epsilon=0.2, epsilon_high=0.28)),
    ("ppo geometric", dict(loss="ppo", level="geometric_average", epsilon=0.2, epsilon_high=0.28)),
    ("gspo per history", dict(loss="ppo", level="sequence", ratio_per_history=True, epsilon=0.1, epsilon_high=0.15)),
    ("ppo average per history", dict(loss="ppo", level="average", ratio_per_history=True, epsilon=0.2, epsilon_high=0.28)),
    ("art max is weight", dict(max_is_weight=1.2)),
    ("ppo max is weight", dict(loss="ppo", epsilon=0.2, epsilon_high=0.5, max_is_weight=1.1)),
    ("ppo sequence max is weight", dict(loss="ppo", level="sequence", epsilon=0.2, epsilon_high=0.5, max_is_weight=1.05)),
    ("art mask ratio", dict(mask_prob_ratio=True, epsilon=0.3, epsilon_high=0.3)),
    ("ppo mask ratio", dict(loss="ppo", mask_prob_ratio=True, epsilon=0.3, epsilon_high=0.3)),
    ("art kimi tau", dict(kimi_k2_tau=0.5)),
    ("ppo kimi tau", dict(loss="ppo", epsilon=0.2, epsilon_high=0.2, kimi_k2_tau=0.3)),
    ("art tis sampler", dict(tis=1.3, tis_mode="sampler")),
    ("ppo geometric tis sampler", dict(loss="ppo", level="geometric_average", epsilon=0.2, epsilon_high=0.28, tis=1.1, tis_mode="sampler")),
    ("art norm", dict(norm="art")),
    ("ppo norm art kl", dict(loss="ppo", norm="art", epsilon=0.2, epsilon_high=0.2, beta=0.2)),
    ("everything", dict(loss="ppo", level="average", ratio_per_history=True, epsilon=0.2, epsilon_high=0.4,
                        max_is_weight=1.3, mask_prob_ratio=True, kimi_k2_tau=0.2, tis=1.2, tis_mode="sampler",
                        norm="art", beta=0.05)),
    # ART's kl_penalty_coef: an advantage shift, no loss term.
    ("art norm kl penalty", dict(norm="art", kl_penalty_coef=0.5)),
    ("ppo norm kl penalty sample", dict(loss="ppo", norm="art", epsilon=0.2, epsilon_high=0.28,
                                        kl_penalty_coef=0.7, kl_penalty_source="sample")),
    ("art norm kl penalty with beta, kimi, average, tis", dict(norm="art", kl_penalty_coef=0.3, beta=0.1, kimi_k2_tau=0.2,
                                                               level="average", epsilon=0.2, epsilon_high=0.28,
                                                               tis=1.2, tis_mode="sampler")),
]
out_cases = []
for name, over in cases:
    c = dict(base, **over)
    x = lp.clone().requires_grad_(True)
    policy, kl, loss, kl_ref = loss_fn(c, x)
    loss.backward()
    grad = [x.grad[i, t].item() for i in range(I) for t in range(lengths[i])]
    out_cases.append(dict(name=name, config=c, policy=policy.item(), kl=kl.item(), loss=loss.item(),
                          kl_ref=kl_ref.item(), grad=grad))


def flat(x):
    return [x[i, t].item() for i in range(I) for t in range(lengths[i])]


golden = dict(
    lengths=lengths,
    logprob=flat(lp), old=[None if old_nan[i, t] else old[i, t].item() for i in range(I) for t in range(lengths[i])],
    sampler=flat(sampler), ref=flat(ref), adv=adv.tolist(), cases=out_cases,
    hist_lengths=hist_lengths, weight=weight.tolist(),
)
text = json.dumps(golden, indent=1, allow_nan=False) + "\n"
with open(os.path.join(HERE, "golden.json"), "w") as f:
    f.write(text)
script = open(os.path.abspath(__file__), "rb").read()
prov = dict(
    command="/usr/bin/python3 train/grpo/testdata/golden/make_golden.py",
    torch=torch.__version__, python=sys.version.split()[0],
    sha256={"golden.json": hashlib.sha256(text.encode()).hexdigest(), "make_golden.py": hashlib.sha256(script).hexdigest()},
)
with open(os.path.join(HERE, "provenance.json"), "w") as f:
    json.dump(prov, f, indent=1)
    f.write("\n")
