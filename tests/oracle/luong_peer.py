"""The benchmark peer's luong (bench/peers/torch_luong.py, the model `attn bench
train|decode --model luong` times against attn) on a small padded batch, so that
tests/test_parity_luong_peer.cpp holds it to attn's luong: the same parameters
must give the same loss, gradients and search steps, or the benchmark compares
two different computations. The peer's own initialisation (float32 values),
computed here in float64, dropout 0, eval mode (no dropout draws).
Saved: every parameter as "param.<attn name>" and its gradient as "grad.<attn name>"
(of the label-smoothed loss), "src", "lengths", "tgt_in", "tgt_out", "loss", and
the log-probabilities of two search steps, "log_probs1" (prev = BOS) and
"log_probs2" (prev = "prev2").
Usage: luong_peer.py OUT.safetensors V E HE HD"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
import mt_common  # noqa: E402
import st  # noqa: E402
import torch_luong  # noqa: E402

torch.manual_seed(1234)
out_path = sys.argv[1]
V, E, He, Hd = (int(a) for a in sys.argv[2:])
model = torch_luong.Luong(V, E, He, Hd, dropout=0.0).double()
model.eval()

# attn's parameter names for the peer's (LSTMCell -> the one-layer decoder stack)
names = {"general.weight": "attention.W", "out.weight": "output.weight", "out.bias": "output.bias"}
for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
    names["decoder." + k] = "decoder." + k + "_l0"

lengths = torch.tensor([4, 2, 3])  # padded sources and targets of unequal lengths
tgt_lengths = [3, 4, 1]
B, S, T = 3, 4, 5
src = torch.zeros(B, S, dtype=torch.long)
tgt_in = torch.zeros(B, T, dtype=torch.long)
tgt_out = torch.zeros(B, T, dtype=torch.long)
for b in range(B):
    src[b, :lengths[b]] = torch.randint(4, V, (int(lengths[b]),))
    tgt = torch.randint(4, V, (tgt_lengths[b],))
    tgt_in[b, 0] = mt_common.BOS
    tgt_in[b, 1:tgt_lengths[b] + 1] = tgt
    tgt_out[b, :tgt_lengths[b]] = tgt
    tgt_out[b, tgt_lengths[b]] = mt_common.EOS

loss = model.loss(src, lengths, tgt_in, tgt_out)
loss.backward()
saved = {"src": src, "lengths": lengths, "tgt_in": tgt_in, "tgt_out": tgt_out, "loss": loss.reshape(1)}
for n, p in model.named_parameters():
    saved["param." + names.get(n, n)] = p
    saved["grad." + names.get(n, n)] = p.grad
with torch.no_grad():
    memory, state = model.encode(src, lengths)
    lp1, state = model.step(memory, state, torch.full((B,), mt_common.BOS))
    prev2 = torch.randint(4, V, (B,))
    lp2, _ = model.step(memory, state, prev2)
saved.update({"log_probs1": lp1, "log_probs2": lp2, "prev2": prev2})
st.save(out_path, {k: v.detach().double() for k, v in saved.items()})
