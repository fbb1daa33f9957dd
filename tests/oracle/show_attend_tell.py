"""PyTorch reference for the captioner's first two decoder steps with soft
attention (models/show_attend_tell/show_attend_tell.h), as image.py: parameters and inputs drawn
here with a fixed seed, rounded to float32 and saved, the reference computed in
float64. loss = sum(log_probs_1 * R1) + sum(log_probs_2 * R2); saved: every
parameter as "param.<attn name>", its gradient as "grad.<attn name>", the
images "x" and "grad.x", the tokens "prev2", both steps' log-probabilities and
attention weights.
Usage: show_attend_tell.py OUT.safetensors B SIZE CNN_CHANNELS BLOCKS E HD A V"""
import sys

import torch
import torch.nn.functional as F

import st

torch.manual_seed(1234)
out_path = sys.argv[1]
B, S, C0, blocks, E, Hd, A, V = (int(a) for a in sys.argv[2:])
BOS = 1
T = {}
P = {}


def param(name, *shape, scale=0.3):
    t = (torch.randn(*shape) * scale).float().double().requires_grad_(True)
    P[name] = t
    return t


channels = [C0 * 2**k for k in range(blocks)]
cins = [3] + channels[:-1]
for k, (ci, co) in enumerate(zip(cins, channels)):
    param(f"encoder.blocks.{k}.conv.weight", co, ci, 3, 3)
    param(f"encoder.blocks.{k}.norm.weight", co)
    param(f"encoder.blocks.{k}.norm.bias", co)
D = channels[-1]
L = (S >> blocks) ** 2
param("grid_position", L, D)
for n in ("init_h", "init_c"):
    param(n + ".weight", Hd, D)
    param(n + ".bias", Hd)
param("attention.key.weight", A, D)
param("attention.key.bias", A)
param("attention.query.weight", A, Hd)
param("attention.v", A)
param("gate.weight", 1, Hd)
param("gate.bias", 1)
param("embed.weight", V, E)
param("decoder.weight_ih", 4 * Hd, E + D)
param("decoder.weight_hh", 4 * Hd, Hd)
param("decoder.bias_ih", 4 * Hd)
param("decoder.bias_hh", 4 * Hd)
param("output.h.weight", E, Hd)
param("output.z.weight", E, D)
param("output.weight", V, E)
param("output.bias", V)

x = torch.randn(B, 3, S, S).float().double().requires_grad_(True)
prev2 = torch.randint(4, V, (B,))

a = x
for k in range(blocks):
    a = F.conv2d(a, P[f"encoder.blocks.{k}.conv.weight"], padding=1)
    a = F.group_norm(a, 8, P[f"encoder.blocks.{k}.norm.weight"], P[f"encoder.blocks.{k}.norm.bias"], 1e-5)
    a = F.max_pool2d(F.relu(a), 2)
a = a.flatten(2).transpose(1, 2) + P["grid_position"]  # [B, L, D], plus each cell's position vector
keys = a @ P["attention.key.weight"].T + P["attention.key.bias"]
mean_a = a.mean(1)
h = torch.tanh(mean_a @ P["init_h.weight"].T + P["init_h.bias"])
c = torch.tanh(mean_a @ P["init_c.weight"].T + P["init_c.bias"])


def step(prev, h, c):
    emb = P["embed.weight"][prev]
    e = torch.tanh(keys + (h @ P["attention.query.weight"].T)[:, None, :]) @ P["attention.v"]
    alpha = torch.softmax(e, 1)
    z = (alpha[:, :, None] * a).sum(1) * torch.sigmoid(h @ P["gate.weight"].T + P["gate.bias"])
    gates = (torch.cat([emb, z], 1) @ P["decoder.weight_ih"].T + P["decoder.bias_ih"] + h @ P["decoder.weight_hh"].T
             + P["decoder.bias_hh"])
    i, f, g, o = gates.chunk(4, 1)  # PyTorch's gate order
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h = torch.sigmoid(o) * torch.tanh(c)
    features = emb + h @ P["output.h.weight"].T + z @ P["output.z.weight"].T
    return torch.log_softmax(features @ P["output.weight"].T + P["output.bias"], 1), alpha, h, c


lp1, w1, h, c = step(torch.full((B,), BOS), h, c)
lp2, w2, h, c = step(prev2, h, c)
R1, R2 = torch.randn_like(lp1).float().double(), torch.randn_like(lp2).float().double()
((lp1 * R1).sum() + (lp2 * R2).sum()).backward()
for n, t in P.items():
    T["param." + n] = t
    T["grad." + n] = t.grad
T.update({"x": x, "grad.x": x.grad, "prev2": prev2.double(), "log_probs1": lp1, "log_probs2": lp2, "weights1": w1,
          "weights2": w2, "R1": R1, "R2": R2})
st.save(out_path, {k: v.detach() for k, v in T.items()})
