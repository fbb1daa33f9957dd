"""PyTorch reference values for the image ops and the CNN encoder (forward and
every gradient), as ops.py: inputs drawn here with a fixed seed, rounded to
float32 and saved, the reference computed in float64, loss = sum(out * R).
Usage: image.py OUT.safetensors CASE ARGS...
  conv B CIN H W COUT KH KW STRIDE PADDING BIAS(0|1)
  pool B C H W KERNEL STRIDE   (pool_ties: the same on small integers)
  group_norm B C H W GROUPS
  encoder B H W GROUPS POOL CH1 CH2 ...   (3 input channels, kernel 3)"""
import sys

import torch
import torch.nn.functional as F

import st

torch.manual_seed(4321)
out_path, case, args = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
T = {}


def leaf(name, t):
    t = t.float().double().requires_grad_(True)  # float32 values, float64 arithmetic
    T[name] = t
    return t


def finish(y, names):
    r = torch.randn_like(y).float().double()
    (y * r).sum().backward()
    T["out"] = y
    T["R"] = r
    for n in names:
        T["grad." + n] = T[n].grad


class Block(torch.nn.Module):
    """attn's CnnBlock: conv (no bias, padding k//2) -> GroupNorm -> ReLU -> max-pool."""

    def __init__(self, cin, cout, groups, pool):
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.norm = torch.nn.GroupNorm(groups, cout)
        self.pool = pool

    def forward(self, x):
        return F.max_pool2d(F.relu(self.norm(self.conv(x))), self.pool)


class Encoder(torch.nn.Module):
    def __init__(self, channels, groups, pool):
        super().__init__()
        cins = [3] + channels[:-1]
        self.blocks = torch.nn.ModuleList(Block(i, o, groups, pool) for i, o in zip(cins, channels))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x.flatten(2).transpose(1, 2)  # [batch, D, Gh, Gw] -> [batch, Gh*Gw, D], cell = row*Gw + col


if case == "conv":
    B, CIN, H, W, COUT, KH, KW, S, P, BIAS = args
    x = leaf("x", torch.randn(B, CIN, H, W))
    conv = torch.nn.Conv2d(CIN, COUT, (KH, KW), bias=bool(BIAS))  # torch's initialisation
    w = leaf("weight", conv.weight.data)
    b = leaf("bias", conv.bias.data) if BIAS else None
    finish(F.conv2d(x, w, b, stride=S, padding=P), ["x", "weight"] + (["bias"] if BIAS else []))
elif case in ("pool", "pool_ties"):
    B, C, H, W, K, S = args
    # pool_ties: small integers, so most windows hold a tied maximum (the gradient goes to the first one)
    x = leaf("x", torch.randint(0, 3, (B, C, H, W)).float() if case == "pool_ties" else torch.randn(B, C, H, W))
    finish(F.max_pool2d(x, K, S), ["x"])
elif case == "group_norm":
    B, C, H, W, G = args
    x = leaf("x", torch.randn(B, C, H, W) * 2 + 1)
    w = leaf("weight", torch.randn(C))
    b = leaf("bias", torch.randn(C))
    finish(F.group_norm(x, G, w, b, 1e-5), ["x", "weight", "bias"])
elif case == "encoder":
    B, H, W, G, POOL = args[:5]
    enc = Encoder(args[5:], G, POOL).double()
    names = []
    for n, p in enc.named_parameters():
        with torch.no_grad():
            if n.endswith("norm.weight") or n.endswith("norm.bias"):  # not torch's 1 / 0: exercise the affine
                p.copy_(torch.randn_like(p) * 0.3 + (1.0 if n.endswith("weight") else 0.0))
            p.copy_(p.float().double())
        T[n] = p
        names.append(n)
    x = leaf("x", torch.rand(B, 3, H, W))
    finish(enc(x), ["x"] + names)
else:
    raise SystemExit("unknown case " + case)

st.save(out_path, T)
