"""PyTorch reference values for the engine's basic layers (forward and every
gradient). Usage: ops.py OUT.safetensors CASE. Inputs are drawn here with a
fixed seed, rounded to float32 and saved with the results, so the C++ side
runs on exactly them; the reference itself is computed in float64, so the
comparison measures our float32 error, not the sum of two.
The loss is sum(out * R) for a saved random R (gradient seed = R)."""
import sys

import torch

import st

torch.manual_seed(1234)
torch.set_default_dtype(torch.float32)
out_path, case = sys.argv[1], sys.argv[2]
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


if case == "linear":
    x = leaf("x", torch.randn(4, 7, 33))
    lin = torch.nn.Linear(33, 65)  # for torch's initialisation
    w, b = leaf("weight", lin.weight.data), leaf("bias", lin.bias.data)
    finish(torch.nn.functional.linear(x, w, b), ["x", "weight", "bias"])
elif case == "embedding":
    w = leaf("weight", torch.randn(50, 16))
    ids = torch.randint(0, 50, (5, 9))
    ids[0, :3] = 3  # padding positions
    T["ids"] = ids.float()
    finish(torch.nn.functional.embedding(ids, w, padding_idx=3), ["weight"])
elif case in ("softmax", "log_softmax"):
    x = leaf("x", torch.randn(3, 4, 6, 10) * 3)
    lengths = torch.tensor([10, 7, 1, 4])
    mask = (torch.arange(10)[None, :] < lengths[:, None]).float()  # [4, 10] key padding
    mask = mask[None, :, None, :].expand(3, 4, 6, 10).clone()
    mask[1, 2, 3, :] = 0  # one fully masked row
    T["mask"] = mask
    xm = x.masked_fill(mask == 0, float("-inf"))
    y = torch.softmax(xm, -1) if case == "softmax" else torch.log_softmax(xm, -1)
    y = torch.nan_to_num(y, nan=0.0, neginf=0.0)  # our contract: masked/fully masked -> 0
    finish(y, ["x"])
elif case == "cross_entropy":
    logits = leaf("logits", torch.randn(37, 101) * 2)
    tgt = torch.randint(1, 101, (37,))
    tgt[::5] = 0  # ignored (padding)
    T["targets"] = tgt.float()
    loss = torch.nn.functional.cross_entropy(logits, tgt, ignore_index=0, label_smoothing=0.1)
    loss.backward()
    T["out"] = loss.reshape([])
    T["grad.logits"] = logits.grad
elif case == "layer_norm":
    x = leaf("x", torch.randn(5, 6, 48) * 2 + 1)
    w = leaf("weight", torch.randn(48))
    b = leaf("bias", torch.randn(48))
    finish(torch.nn.functional.layer_norm(x, (48,), w, b, 1e-5), ["x", "weight", "bias"])
else:
    raise SystemExit("unknown case " + case)

st.save(out_path, T)
