"""Golden values for hone-train's --norm art step (train/grpojob.stepJob).

A PyTorch restatement of how OpenPipe ART turns one train() call's
trajectory groups into optimizer steps, on a small batch:

- group advantages and the per-trajectory weight 1/(assistant tokens + 1e-6)
  (src/art/preprocessing/tokenize.py, tokenize_trajectory_groups; zero
  advantages dropped);
- every history its own result, packed greedily in order into rows of
  seq_len tokens; the batch normalization of weights (mean 1 over assistant
  tokens) and advantages (advantage_balance, then divided by mean(|A|·w))
  (src/art/preprocessing/pack.py, packed_tensors_from_tokenized_results);
- the loss of each packed row, with its shift by one token
  (src/art/loss.py, loss_fn); kl_penalty_coef and kl_penalty_source as the
  later loss_fn has them (beside src/art/types.py at 0d73242): each
  assistant token's advantage shifted by coef·(mean k − k_t), k_t =
  sg(ℓ^src_t − ℓ^ref_t), ℓ^src the current logprob (current_learner) or
  the sampled one (sample), the mean over the row's assistant tokens
  (sum / (count + 1e-18)), and kl_policy_ref that mean;
- one optimizer step per row, its learning rate times
  (#distinct group ids − #distinct parent ids)^power
  (src/art/unsloth/train.py, num_trajectories_learning_rate_multiplier_power);
- scale_learning_rate_by_reward_std_dev's multiplier from the history of
  the mean within-group reward std (src/art/local/backend.py,
  _get_reward_std_dev_learning_rate_multiplier, with numpy.polyfit).

Where ART draws randomness (shuffling a group's results and the rows, the
random prompt and group ids) this script keeps the data order and numbers
the ids in order: hone-train's order is the data's, and the ids only need
to be distinct. ART's v0.5 packer also lets a history that shares its
group's prompt with one already in the row skip that prompt; Hone packs
every history whole, and so does this script: rows are compared with that
rule.

Run from the repository root:

    /usr/bin/python3 train/grpojob/testdata/artstep/make_golden.py

It rewrites golden.json and provenance.json beside itself.
"""
import hashlib
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
g = torch.Generator().manual_seed(20261204)


def f32(x):
    return float(torch.tensor(x, dtype=torch.float32).item())


# A history is a string of token kinds: p prompt, a assistant (sampled),
# t tool output. Token ids are 10000·trajectory + 100·history + position + 1,
# unique, so the Go test finds each token by its id.
groups = [
    dict(rewards=[1.0, 0.0, 0.5], hists=[["ppppaaa"], ["pppptaaaaa"], ["ppppaa"]]),
    dict(rewards=[2.0, 2.0], hists=[["pppaa"], ["pppaaa"]]),  # equal rewards: dropped
    dict(rewards=[0.2, 0.9, 0.2, 0.4], hists=[["pppaaaa"], ["pppaattaa", "ppaaa"], ["pppa"], ["pppaaaaaaa"]]),
]
trajs = []  # (group, index in group, reward, hists)
for gi, gr in enumerate(groups):
    for k, (r, hs) in enumerate(zip(gr["rewards"], gr["hists"])):
        trajs.append(dict(group=gi, reward=r, hists=hs))
for ti, tr in enumerate(trajs):
    tr["ids"], tr["old"], tr["new"] = [], [], []
    for hi, h in enumerate(tr["hists"]):
        ids = [10000 * (ti + 1) + 100 * hi + j + 1 for j in range(len(h))]
        old = [f32(-2.5 * torch.rand(1, generator=g).item() - 0.05) if c == "a" else None for c in h]
        new = [f32(o + 0.3 * torch.randn(1, generator=g).item()) if o is not None else None for o in old]
        tr["ids"].append(ids)
        tr["old"].append(old)
        tr["new"].append(new)


# Base-model (adapter off) logprobs of the assistant tokens, from their own
# generator so that the values above stay as they were.
g_ref = torch.Generator().manual_seed(20261206)
for tr in trajs:
    tr["ref"] = [[f32(n - 0.05 - 0.4 * torch.rand(1, generator=g_ref).item()) if n is not None else None for n in new]
                 for new in tr["new"]]


def advantages(scale=True):
    out = {}
    for gi, gr in enumerate(groups):
        r = torch.tensor(gr["rewards"], dtype=torch.float64)
        a = r - r.mean()
        if scale:
            a = a / (r.std(unbiased=False) + 1e-6)
        members = [ti for ti, tr in enumerate(trajs) if tr["group"] == gi]
        for ti, av in zip(members, a.tolist()):
            out[ti] = av
    return out


def run_case(c):
    adv = advantages()
    # Results: (trajectory, history) in order, zero advantages dropped.
    results = []
    for ti, tr in enumerate(trajs):
        if adv[ti] == 0:
            continue
        n = sum(h.count("a") for h in tr["hists"])
        w = 1 / (n + 1e-6)
        for hi, h in enumerate(tr["hists"]):
            results.append(dict(traj=ti, hist=hi, kinds=h, ids=tr["ids"][hi], old=tr["old"][hi], new=tr["new"][hi],
                                ref=tr["ref"][hi], adv=adv[ti], w=w))
    seq_len = c["packed_sequence_length"]
    if seq_len == 0:
        seq_len = math.ceil(max(len(r["kinds"]) for r in results) / 2048) * 2048
    rows = []
    for r in results:
        if not rows or sum(len(x["kinds"]) for x in rows[-1]) + len(r["kinds"]) > seq_len:
            rows.append([])
        rows[-1].append(r)
    R = len(rows)
    tokens = torch.zeros(R, seq_len, dtype=torch.long)
    group_ids = torch.full((R, seq_len), -1, dtype=torch.long)
    parent_ids = torch.full((R, seq_len), -1, dtype=torch.long)
    mask = torch.zeros(R, seq_len, dtype=torch.bool)
    logprobs = torch.full((R, seq_len), float("nan"), dtype=torch.float64)
    newlp = torch.zeros(R, seq_len, dtype=torch.float64)
    reflp = torch.zeros(R, seq_len, dtype=torch.float64)
    advs = torch.zeros(R, seq_len, dtype=torch.float64)
    weights = torch.zeros(R, seq_len, dtype=torch.float64)
    next_id = len(trajs) + 1
    for ri, row in enumerate(rows):
        t = 0
        for r in row:
            prompt_id = r["traj"] + 1  # one id per trajectory's prompt
            for j, kind in enumerate(r["kinds"]):
                tokens[ri, t] = r["ids"][j]
                parent_ids[ri, t] = prompt_id
                group_ids[ri, t] = prompt_id if kind == "p" else next_id
                if kind == "a":
                    mask[ri, t] = True
                    logprobs[ri, t] = r["old"][j]
                    newlp[ri, t] = r["new"][j]
                    reflp[ri, t] = r["ref"][j]
                advs[ri, t] = r["adv"]
                weights[ri, t] = r["w"]
                t += 1
            next_id += 1
    # pack.py: batch normalization over assistant tokens.
    weights = torch.where(mask, weights, torch.zeros_like(weights))
    weights[mask] /= weights[mask].mean()
    advs = torch.where(mask, advs, torch.zeros_like(advs))
    b = c["advantage_balance"]
    if b > 0:
        advs = torch.where(advs > 0, advs, advs * (1 - b))
    elif b < 0:
        advs = torch.where(advs < 0, advs, advs * (1 + b))
    advs[mask] /= (advs[mask].abs() * weights[mask]).mean()

    def shift(x, pad):
        return torch.nn.functional.pad(x[:, 1:], (0, 1), value=pad)

    out_rows = []
    for ri in range(R):
        sl = slice(ri, ri + 1)
        # new_logprobs[t] is the log-probability of token t+1.
        new = shift(newlp[sl], 0.0).clone().requires_grad_(True)
        old = shift(logprobs[sl], float("nan"))
        A = shift(advs[sl], 0.0)
        m = shift(mask[sl], False).double()
        w = shift(weights[sl], 0.0)
        old = torch.where(torch.isnan(old), new.detach(), old)
        diff = new - old
        ratio = torch.exp(diff)
        level = c["level"]
        if level != "token":
            gid = (shift(group_ids[sl], 0) * m.long())[0]
            s = torch.zeros_like(diff[0])
            for u in gid.unique():
                sel = gid == u
                s = torch.where(sel, diff[0][sel].mean(), s)
            seq = torch.exp(s).unsqueeze(0)
            if level == "sequence":
                ratio = seq
            elif level == "average":
                ratio = (ratio + seq) / 2
            else:
                ratio = ratio**0.5 * seq**0.5
        eps, eps_hi = c["epsilon"], c["epsilon_high"]
        if c["max_is_weight"]:
            ratio = torch.clamp(ratio, max=c["max_is_weight"])
        if c["mask_prob_ratio"]:
            ratio = torch.where((ratio > 1 - eps) & (ratio < 1 + eps_hi), ratio, torch.zeros_like(ratio))
        if c["kimi_k2_tau"]:
            A = A - c["kimi_k2_tau"] * diff.detach()
        kl_ref = 0.0
        if c["kl_penalty_coef"] > 0:
            src = old.detach() if c["kl_penalty_source"] == "sample" else new.detach()
            k = (src - shift(reflp[sl], 0.0)).detach() * m
            avg = k.sum() / (m.sum() + 1e-18)
            A = A + c["kl_penalty_coef"] * (avg - k) * m
            kl_ref = avg.item()
        if c["ppo"]:
            pl = -torch.min(ratio * A, torch.clip(ratio, 1 - eps, 1 + eps_hi) * A)
        else:
            pl = -(torch.clip(ratio.detach(), 1 - eps, 1 + eps_hi) * A * new)
        if c["tis"]:
            pl = pl * torch.clamp(ratio, max=c["tis"]).detach()
        pl = pl * w * m
        loss = pl.sum() / (m.sum() + 1e-6)
        loss.backward()
        grads = {}
        for t in range(seq_len - 1):
            if m[0, t] > 0:
                grads[str(int(tokens[ri, t + 1]))] = new.grad[0, t].item()
        # The learning-rate multiplier of this row's step.
        n_results = len(group_ids[ri].unique()) - len(parent_ids[ri].unique())
        out_rows.append(dict(
            results=[[r["traj"], r["hist"]] for r in rows[ri]],
            loss=loss.item(), grad=grads, kl_ref=kl_ref,
            lr_scale=float(n_results) ** c["lr_trajectories_power"],
        ))
    return dict(seq_len=seq_len, rows=out_rows)


base = dict(packed_sequence_length=16, advantage_balance=0.0, lr_trajectories_power=0.0, ppo=False,
            epsilon=1.0, epsilon_high=4.0, level="token", max_is_weight=0.0, mask_prob_ratio=False,
            kimi_k2_tau=0.0, tis=0.0, kl_penalty_coef=0.0, kl_penalty_source="current_learner")
cases = [
    ("art defaults, rows of 16", {}),
    ("rows of 24, balance, lr power, ppo, sequence ratio", dict(packed_sequence_length=24, advantage_balance=0.3,
                                                              lr_trajectories_power=0.5, ppo=True, epsilon=0.2, epsilon_high=0.28,
                                                              level="sequence")),
    ("auto row length, negative balance, geometric, cap", dict(packed_sequence_length=0, advantage_balance=-0.4,
                                                             level="geometric_average", max_is_weight=1.2, lr_trajectories_power=1.0)),
    ("rows of 12, average, mask, kimi, tis sampler", dict(packed_sequence_length=12, level="average", ppo=True, epsilon=0.3,
                                                        epsilon_high=0.3, mask_prob_ratio=True, kimi_k2_tau=0.4, tis=1.1)),
    ("rows of 16, kl penalty", dict(kl_penalty_coef=0.4)),
    ("rows of 24, ppo, kimi, kl penalty from the sample", dict(packed_sequence_length=24, ppo=True, epsilon=0.2,
                                                              epsilon_high=0.28, kimi_k2_tau=0.3, kl_penalty_coef=0.8,
                                                              kl_penalty_source="sample")),
]
out_cases = []
for name, over in cases:
    c = dict(base, **over)
    out_cases.append(dict(name=name, config=c, **run_case(c)))

# scale_learning_rate_by_reward_std_dev on histories of the mean
# within-group reward std, one value per step.


def std_multiplier(y):
    if len(y) < 2:
        return 1.0
    steps = np.arange(len(y), dtype=np.float64)
    coef, intercept = np.polyfit(steps, np.array(y, dtype=np.float64), deg=1)
    if intercept > 0:
        return float((coef * steps[-1] + intercept) / intercept)
    return 1.0


std_cases = []
for y in ([0.4], [0.5, 0.3], [0.42, 0.40, 0.31, 0.35, 0.2], [0.1, 0.2, 0.3], [0.0, 0.0, 0.0], [-0.2, 0.1, 0.05, 0.3]):
    std_cases.append(dict(y=y, scale=std_multiplier(y)))
step_std = float(np.mean([np.std(gr["rewards"]) for gr in groups if len(gr["rewards"]) > 1]))

golden = dict(
    trajectories=[dict(group=tr["group"], reward=tr["reward"], hists=tr["hists"], ids=tr["ids"], old=tr["old"], new=tr["new"],
                       ref=tr["ref"]) for tr in trajs],
    cases=out_cases, std_cases=std_cases, step_reward_std=step_std,
)
text = json.dumps(golden, indent=1, allow_nan=False) + "\n"
with open(os.path.join(HERE, "golden.json"), "w") as f:
    f.write(text)
script = open(os.path.abspath(__file__), "rb").read()
prov = dict(
    command="/usr/bin/python3 train/grpojob/testdata/artstep/make_golden.py",
    torch=torch.__version__, numpy=np.__version__, python=sys.version.split()[0],
    sha256={"golden.json": hashlib.sha256(text.encode()).hexdigest(), "make_golden.py": hashlib.sha256(script).hexdigest()},
)
with open(os.path.join(HERE, "provenance.json"), "w") as f:
    json.dump(prov, f, indent=1)
    f.write("\n")
