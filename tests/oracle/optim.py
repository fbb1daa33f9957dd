"""torch.optim reference for tests/test_train.cpp.

usage: optim.py OUT KIND [key=value ...]
  KIND: sgd | adam | adamw  (key=value: the optimizer's keyword arguments,
        e.g. lr=0.1 momentum=0.9 nesterov=1) or clip (max_norm=, norm_type=).
Writes (safetensors, via st.py):
  init.<p>          parameters before the first step
  grad.<t>.<p>      gradient of <p> at step t (absent: p.grad is None at step t)
  final.<p>         parameters after the last step
  <state>.<p>       optimizer state after the last step (exp_avg, exp_avg_sq,
                    momentum_buffer; step as a 1-element tensor)
  clip: grad.0.<p> before clipping, clipped.<p> after, total_norm [1].
The learning rate is halved before step LR_STEP to exercise schedules;
metadata "steps" and "lr_step" tell the C++ side the schedule.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

STEPS = 6
LR_STEP = 3
SHAPES = {"w": (4, 3), "b": (3,), "layer.v": (2, 2, 5)}
# steps at which a parameter has no gradient (p.grad = None): optimizers skip it
NO_GRAD = {"b": {3}, "layer.v": {0, 1}}


def parse(args):
    kw = {}
    for a in args:
        k, v = a.split("=", 1)
        if k == "nesterov":
            kw[k] = bool(int(v))
        elif k in ("beta1", "beta2"):
            kw.setdefault("betas", [0.9, 0.999])[0 if k == "beta1" else 1] = float(v)
        else:
            kw[k] = float(v)
    if "betas" in kw:
        kw["betas"] = tuple(kw["betas"])
    return kw


def main():
    out, kind, kw = sys.argv[1], sys.argv[2], parse(sys.argv[3:])
    torch.manual_seed(1234)
    params = {n: torch.randn(s, dtype=torch.float32).requires_grad_() for n, s in SHAPES.items()}
    res = {f"init.{n}": p.detach().clone() for n, p in params.items()}

    if kind == "clip":
        gen = torch.Generator().manual_seed(99)
        for n, p in params.items():
            if n == "b":
                continue  # no grad: ignored by the norm
            p.grad = torch.randn(p.shape, generator=gen) * 3.0
            res[f"grad.0.{n}"] = p.grad.clone()
        norm_type = kw.get("norm_type", 2.0)
        total = torch.nn.utils.clip_grad_norm_(list(params.values()), kw["max_norm"], norm_type=norm_type)
        res["total_norm"] = torch.tensor([float(total)])
        for n, p in params.items():
            if p.grad is not None:
                res[f"clipped.{n}"] = p.grad.clone()
        st.save(out, res, {"kind": "clip"})
        return

    make = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    opt = make(list(params.values()), **kw)
    gen = torch.Generator().manual_seed(7)
    for t in range(STEPS):
        if t == LR_STEP:
            for g in opt.param_groups:
                g["lr"] *= 0.5
        for n, p in params.items():
            g = torch.randn(p.shape, generator=gen)
            if t in NO_GRAD.get(n, ()):
                p.grad = None
            else:
                p.grad = g
                res[f"grad.{t}.{n}"] = g.clone()
        opt.step()
    for n, p in params.items():
        res[f"final.{n}"] = p.detach().clone()
        for k, v in opt.state[p].items():
            if v is None:  # SGD without momentum keeps momentum_buffer = None
                continue
            res[f"{k}.{n}"] = torch.tensor([float(v)]) if k == "step" else v.clone()
    st.save(out, res, {"steps": STEPS, "lr_step": LR_STEP})


if __name__ == "__main__":
    main()
