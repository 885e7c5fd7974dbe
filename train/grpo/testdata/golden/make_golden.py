"""Golden values for train/grpo.Loss, computed with PyTorch autograd.

An independent implementation of the GRPO loss family on padded [I, Tmax]
tensors (the TRL layout), in float64 on float32-representable inputs:
loss terms and d loss / d logprob for each variant. Run from the repository
root:

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


def loss_fn(c, lp):
    o = torch.where(old_nan, lp.detach(), old)
    delta = (lp - o) * mask
    n = mask.sum(1)
    if c["level"] == "token":
        ratio = torch.exp(delta)
    else:
        ratio = torch.exp(delta.sum(1) / n).unsqueeze(1).expand(I, T)
    lo, hi = 1 - c["epsilon"], 1 + c["epsilon_high"]
    clipped = torch.clamp(ratio, lo, hi)
    A = adv.unsqueeze(1)
    if c["loss"] == "art":
        l = -clipped.detach() * A * lp
    else:
        l = -torch.min(ratio * A, clipped * A)
    if c["tis"] > 0:
        w = torch.clamp(torch.exp(old - sampler), max=c["tis"])
        w = torch.where(old_nan, torch.ones_like(w), w).detach()
        l = l * w
    d = ref - lp
    k = torch.exp(d) - d - 1
    if c["norm"] == "sequence":
        agg = lambda x: ((x * mask).sum(1) / n).sum() / I
    elif c["norm"] == "tokens":
        agg = lambda x: (x * mask).sum() / mask.sum()
    else:
        agg = lambda x: (x * mask).sum() / (I * c["norm_constant"])
    policy, kl = agg(l), agg(k)
    if c["beta"] == 0:
        kl = torch.zeros((), dtype=torch.float64)  # Hone runs no reference pass without a KL term
    return policy, kl, policy + c["beta"] * kl


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
]
out_cases = []
for name, over in cases:
    c = dict(base, **over)
    x = lp.clone().requires_grad_(True)
    policy, kl, loss = loss_fn(c, x)
    loss.backward()
    grad = [x.grad[i, t].item() for i in range(I) for t in range(lengths[i])]
    out_cases.append(dict(name=name, config=c, policy=policy.item(), kl=kl.item(), loss=loss.item(), grad=grad))


def flat(x):
    return [x[i, t].item() for i in range(I) for t in range(lengths[i])]


golden = dict(
    lengths=lengths,
    logprob=flat(lp), old=[None if old_nan[i, t] else old[i, t].item() for i in range(I) for t in range(lengths[i])],
    sampler=flat(sampler), ref=flat(ref), adv=adv.tolist(), cases=out_cases,
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
