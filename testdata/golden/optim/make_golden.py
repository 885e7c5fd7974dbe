#!/usr/bin/env python3
"""Golden values for trainer.AdamW.Update: torch.nn.utils.clip_grad_norm_
over two tensors (a LoRA A and B), then a torch.optim.AdamW step, three
times, at a learning rate set per step as the schedule does.

Step 1's gradient has a global norm above max_norm (clipped); step 2's
norm is max_norm exactly (sixteen entries of ±max_norm/4), which
clip_grad_norm_ still scales, by max_norm/(norm + 1e-6); step 3's is below
max_norm by more than 1e-6 (left alone). Each step records the gradient as
clip_grad_norm_ left it and the parameters and moments after the step.

Usage (from the repository root):

    /usr/bin/python3 testdata/golden/optim/make_golden.py testdata/golden/optim

It writes golden.json and provenance.json (command, versions, sha256).
"""
import hashlib
import json
import os
import platform
import sys

import torch


def flat(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(11)
    n_a, n_b, max_norm = 8, 8, 1.0
    hp = dict(beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1)
    lrs = [1e-2, 2e-2, 5e-3]
    a = torch.nn.Parameter(torch.randn(n_a, generator=g) * 0.3)
    b = torch.nn.Parameter(torch.randn(n_b, generator=g) * 0.3)
    param0 = flat(a) + flat(b)
    opt = torch.optim.AdamW([a, b], lr=lrs[0], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"],
                            weight_decay=hp["weight_decay"])
    signs = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0] * 2)
    grads = [
        torch.randn(n_a + n_b, generator=g) * 2,  # norm about 8: clipped
        signs * (max_norm / 4),  # norm max_norm exactly
        torch.randn(n_a + n_b, generator=g) * 0.05,  # norm about 0.2: left alone
    ]
    steps = []
    for k, gr in enumerate(grads):
        a.grad, b.grad = gr[:n_a].clone(), gr[n_a:].clone()
        norm = torch.nn.utils.clip_grad_norm_([a, b], max_norm)
        for group in opt.param_groups:
            group["lr"] = lrs[k]
        clipped = flat(a.grad) + flat(b.grad)
        opt.step()
        sa, sb = opt.state[a], opt.state[b]
        steps.append(dict(lr=lrs[k], grad=flat(gr), norm=float(norm), clipped=clipped,
                          param=flat(a) + flat(b), m=flat(sa["exp_avg"]) + flat(sb["exp_avg"]),
                          v=flat(sa["exp_avg_sq"]) + flat(sb["exp_avg_sq"])))
    golden = dict(n_a=n_a, n_b=n_b, max_norm=max_norm, hparams=hp, param0=param0, steps=steps)
    data = json.dumps(golden, separators=(",", ":"), sort_keys=True).encode()
    path = os.path.join(out_dir, "golden.json")
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    prov = dict(command="/usr/bin/python3 testdata/golden/optim/make_golden.py testdata/golden/optim",
                files={"golden.json": hashlib.sha256(data).hexdigest()},
                python=platform.python_version(), torch=torch.__version__)
    ppath = os.path.join(out_dir, "provenance.json")
    with open(ppath + ".tmp", "w") as f:
        json.dump(prov, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(ppath + ".tmp", ppath)


if __name__ == "__main__":
    main()
