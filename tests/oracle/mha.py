"""PyTorch reference for attn::nn::MultiHeadAttention (tests/test_multihead.cpp).

usage: mha.py OUT CASE    CASE: cross_lengths | self_causal | cross_none | self_none | self_keep_lengths
(cross: separate key and value inputs; none: no mask at all; keep_lengths: a
random boolean [Lq, Lk] mask and key padding together, key 0 always visible)
torch.nn.MultiheadAttention(E=8, heads=2, batch_first=True) with random
(non-zero) biases; writes inputs, parameters (torch names), output, per-head
weights, the loss seeds and every gradient (g_<name>).
"""
import sys

import torch

from st import save

out, case = sys.argv[1], sys.argv[2]
torch.manual_seed({"cross_lengths": 7, "self_causal": 8, "cross_none": 9, "self_none": 10, "self_keep_lengths": 11}[case])
cross = case.startswith("cross")
B, E, H = 2, 8, 2
Lq, Lk = (5, 6) if cross else (6, 6)
mha = torch.nn.MultiheadAttention(E, H, batch_first=True).double()
with torch.no_grad():
    mha.in_proj_bias.normal_(0, 0.3)
    mha.out_proj.bias.normal_(0, 0.3)
query = torch.randn(B, Lq, E).double().requires_grad_()
attn_mask = kpm = None
if not cross:
    key = value = query
    if case == "self_causal":
        attn_mask = torch.ones(Lq, Lk).tril().bool().logical_not()  # True = not allowed
    if case == "self_keep_lengths":
        keep = torch.rand(Lq, Lk) < 0.6
        keep[:, 0] = True
        attn_mask = keep.logical_not()
        lengths = [Lk, 4]
        kpm = torch.arange(Lk)[None, :] >= torch.tensor(lengths)[:, None]
else:
    key = torch.randn(B, Lk, E).double().requires_grad_()
    value = torch.randn(B, Lk, E).double().requires_grad_()
    if case == "cross_lengths":
        lengths = [Lk, 3]
        kpm = torch.arange(Lk)[None, :] >= torch.tensor(lengths)[:, None]  # True = padding
y, w = mha(query, key, value, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=True,
           average_attn_weights=False)
r_y, r_w = torch.randn(y.shape).double(), torch.randn(w.shape).double()
((y * r_y).sum() + (w * r_w).sum()).backward()
res = {"query": query, "output": y, "weights": w, "r_y": r_y, "r_w": r_w, "g_query": query.grad}
if cross:
    res.update({"key": key, "value": value, "g_key": key.grad, "g_value": value.grad})
if case in ("cross_lengths", "self_keep_lengths"):
    res["lengths"] = torch.tensor(lengths, dtype=torch.float32)
if case == "self_keep_lengths":
    res["keep"] = keep.float()
for name, p in mha.named_parameters():
    res[name] = p
    res["g_" + name] = p.grad
save(out, {k: v.detach().float() for k, v in res.items()})
