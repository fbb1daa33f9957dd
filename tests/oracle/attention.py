"""PyTorch reference for attn's attention functions (tests/test_attention_oracle.cpp).

usage: attention.py OUT all | attention.py OUT CASE MASK
  CASE: dot | scaled_dot | general | additive | concat | local_m | local_p | additive_step
  MASK: none | lengths | causal | keep | all
For each case (all of CASES, or the one named), writes under "CASE/MASK/": inputs, parameters, the output context and weights, the seeds r_ctx and
r_w of the loss L = sum(context * r_ctx) + sum(weights * r_w), and dL/d(every
input) as g_<name>. Computed in float64 from the float32 inputs.
"""
import math
import sys

import torch

from st import save

def run_case(case, mask_kind):
    torch.manual_seed(20240 + sum(map(ord, case + mask_kind)))

    B, H, Lq, Lk, D, Dv, A = 2, 2, 5, 7, 6, 3, 5
    Dk = D if case in ("dot", "scaled_dot", "local_m", "local_p") else 4

    def rnd(*shape, s=1.0):
        return (torch.randn(*shape) * s).float()

    t = {}
    if case == "additive_step":
        Qd = 6
        t["query"] = rnd(B, Qd)
        t["keys"] = rnd(B, Lk, Dk)
        t["values"] = rnd(B, Lk, Dv)
        t["W1"] = rnd(A, Qd, s=0.5)
        t["W2"] = rnd(A, Dk, s=0.5)
        t["bias"] = rnd(A, s=0.5)
        t["v"] = rnd(A)
        lengths = [Lk, 4] if mask_kind in ("lengths", "all") else [Lk, Lk]
        t["lengths"] = torch.tensor(lengths, dtype=torch.float32)
        x = {k: val.double().requires_grad_(k != "lengths") for k, val in t.items()}
        kp = x["keys"] @ x["W2"].T + x["bias"]                    # [B, Lk, A]
        qp = x["query"] @ x["W1"].T                               # [B, A]
        e = torch.tanh(qp[:, None, :] + kp) @ x["v"]              # [B, Lk]
        valid = torch.arange(Lk)[None, :] < torch.tensor(lengths)[:, None]
        w = torch.softmax(e.masked_fill(~valid, -math.inf), dim=-1)
        ctx = (w[:, :, None] * x["values"]).sum(1)                # [B, Dv]
    else:
        t["q"] = rnd(B, H, Lq, D)
        t["k"] = rnd(B, H, Lk, Dk)
        t["v"] = rnd(B, H, Lk, Dv)
        if case == "general" or case.startswith("local"):
            t["W"] = rnd(D, Dk, s=0.5)
        if case == "additive":
            t["W1"] = rnd(A, D, s=0.5)
            t["W2"] = rnd(A, Dk, s=0.5)
            t["bias"] = rnd(A, s=0.5)
            t["va"] = rnd(A)
        if case == "concat":
            t["Wa"] = rnd(A, D + Dk, s=0.5)
            t["va"] = rnd(A)
        if case == "local_p":
            t["Wp"] = rnd(A, D, s=0.5)
            t["vp"] = rnd(A)
        visible = torch.ones(B, H, Lq, Lk, dtype=torch.bool)
        lengths = [Lk, 4]
        if mask_kind in ("lengths", "all"):
            t["lengths"] = torch.tensor(lengths, dtype=torch.float32)
            visible &= (torch.arange(Lk)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]
        if mask_kind in ("causal", "all"):
            visible &= torch.ones(Lq, Lk).tril().bool()
        if mask_kind in ("keep", "all"):
            keep = (torch.rand(B, 1, Lq, Lk) > 0.3).float()
            keep[1, 0, 2, :] = 0  # a fully masked row
            keep[0, 0, 0, 0] = 1  # causal row 0 keeps its only key
            t["keep"] = keep
            visible &= keep.bool()
        x = {k: val.double().requires_grad_(k not in ("lengths", "keep")) for k, val in t.items()}
        q, k, v = x["q"], x["k"], x["v"]
        if case == "dot":
            s = q @ k.transpose(-1, -2)
        elif case == "scaled_dot":
            s = q @ k.transpose(-1, -2) / math.sqrt(D)
        elif case == "general" or case.startswith("local"):
            s = q @ x["W"] @ k.transpose(-1, -2)
        elif case == "additive":
            s = torch.tanh((q @ x["W1"].T + x["bias"])[:, :, :, None, :] + (k @ x["W2"].T)[:, :, None, :, :]) @ x["va"]
        elif case == "concat":  # literally v^T tanh(Wa [q; k])
            qe = q[:, :, :, None, :].expand(B, H, Lq, Lk, D)
            ke = k[:, :, None, :, :].expand(B, H, Lq, Lk, Dk)
            s = torch.tanh(torch.cat([qe, ke], -1) @ x["Wa"].T) @ x["va"]
        half = 2  # local half-width D
        S = torch.tensor(lengths if "lengths" in t else [Lk, Lk], dtype=torch.float64)
        j = torch.arange(Lk, dtype=torch.float64)
        if case == "local_m":
            pos = torch.arange(Lq, dtype=torch.float64)[:, None] + 1  # position_offset = 1
            visible &= (j[None, :] - pos).abs() <= half
        if case == "local_p":
            p = S[:, None, None] * torch.sigmoid(torch.tanh(q @ x["Wp"].T) @ x["vp"])  # [B, H, Lq]
            t["positions_ref"] = p.detach().float()
            visible &= (j - p[..., None].detach()).abs() <= half
        anyv = visible.any(-1, keepdim=True)
        # fully hidden rows: zeros (filled with 0 before the softmax so no NaN reaches the gradient)
        s = s.masked_fill(~visible & anyv, -math.inf).masked_fill(~anyv, 0.0)
        w = torch.where(anyv, torch.softmax(s, -1), torch.zeros_like(s))
        if case == "local_p":
            sigma = half / 2
            w = w * torch.exp(-((j - p[..., None]) ** 2) / (2 * sigma * sigma))
        ctx = w @ v

    r_ctx = torch.randn(ctx.shape).double()
    r_w = torch.randn(w.shape).double()
    loss = (ctx * r_ctx).sum() + (w * r_w).sum()
    loss.backward()
    res = dict(t)
    res["context"] = ctx.detach().float()
    res["weights"] = w.detach().float()
    res["r_ctx"] = r_ctx.float()
    res["r_w"] = r_w.float()
    for name, val in x.items():
        if val.grad is not None:
            res["g_" + name] = val.grad.float()
    return res


CASES = [(s, m) for s in ("dot", "scaled_dot", "general", "additive", "concat")
         for m in ("none", "lengths", "causal", "keep", "all")]
CASES += [(s, m) for m in ("none", "lengths", "all") for s in ("local_m", "local_p")]
CASES += [("additive_step", "none"), ("additive_step", "lengths")]

if __name__ == "__main__":
    out = sys.argv[1]
    todo = CASES if sys.argv[2] == "all" else [(sys.argv[2], sys.argv[3])]
    res = {}
    for case, mask_kind in todo:  # one torch start for the whole table
        for name, val in run_case(case, mask_kind).items():
            res[case + "/" + mask_kind + "/" + name] = val
    save(out, res)
