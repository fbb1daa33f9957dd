"""PyTorch reference for attn's Transformer layers (tests/test_transformer_layers.cpp).

usage: transformer.py OUT KIND NORM ACT
  KIND: encoder | decoder (one layer) | stack (2 + 2 layers with final norms, as nn.Transformer)
  NORM: pre (norm_first=True) | post;  ACT: relu | gelu
nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (batch_first=True, dropout 0, double
precision) with random non-zero biases and norm weights; source padding as key padding masks
(lengths), the decoder's self-attention causal with target padding. Writes the inputs, the
lengths, every parameter (param.<torch name>), the output, the loss seed r (loss = sum(y * r))
and every gradient (g_x, g_memory, g.<torch name>).
"""
import sys

import torch

from st import save

out, kind, norm, act = sys.argv[1:5]
torch.manual_seed({"encoder": 21, "decoder": 22, "stack": 23}[kind] * 10 + (norm == "pre") * 2 + (act == "gelu"))
B, S, T, E, H, F = 3, 21, 19, 16, 4, 40
src_len, tgt_len = [21, 9, 15], [19, 12, 7]
opts = dict(d_model=E, nhead=H, dim_feedforward=F, dropout=0.0, activation=act, batch_first=True,
            norm_first=(norm == "pre"))
if kind == "encoder":
    model = torch.nn.TransformerEncoderLayer(**opts)
elif kind == "decoder":
    model = torch.nn.TransformerDecoderLayer(**opts)
else:
    model = torch.nn.Module()
    model.encoder = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**opts), 2, norm=torch.nn.LayerNorm(E),
                                                enable_nested_tensor=False)
    model.decoder = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(**opts), 2, norm=torch.nn.LayerNorm(E))
model = model.double()
with torch.no_grad():
    for name, p in model.named_parameters():
        if p.dim() == 1:  # biases and norm weights away from their 0 / 1 init
            p.add_(torch.randn_like(p) * 0.3)


def padding(lengths, n):  # True = padding, as key_padding_mask
    return torch.arange(n)[None, :] >= torch.tensor(lengths)[:, None]


causal = torch.ones(T, T).triu(1).bool()  # True = not allowed
x = torch.randn(B, T if kind != "encoder" else S, E).double().requires_grad_()
memory = torch.randn(B, S, E).double().requires_grad_()
src_kpm, tgt_kpm = padding(src_len, S), padding(tgt_len, T)
# boolean masks throughout: torch 1.13 drops a float key padding mask beside a float
# attn_mask (the padding rows then see padding keys), and refuses mixing the types
fpad = lambda m: m
if kind == "encoder":
    y = model(x, src_key_padding_mask=fpad(src_kpm))
elif kind == "decoder":
    y = model(x, memory, tgt_mask=causal, tgt_key_padding_mask=fpad(tgt_kpm), memory_key_padding_mask=fpad(src_kpm))
else:
    src = memory  # the stack case encodes `memory` (as the source) and decodes x over it
    mem = model.encoder(src, src_key_padding_mask=fpad(src_kpm))
    y = model.decoder(x, mem, tgt_mask=causal, tgt_key_padding_mask=fpad(tgt_kpm), memory_key_padding_mask=fpad(src_kpm))
r = torch.randn(y.shape).double()
(y * r).sum().backward()
res = {"x": x, "output": y, "r": r, "g_x": x.grad, "src_lengths": torch.tensor(src_len, dtype=torch.float32),
       "tgt_lengths": torch.tensor(tgt_len, dtype=torch.float32)}
if kind != "encoder":
    res.update({"memory": memory, "g_memory": memory.grad})
for name, p in model.named_parameters():
    res["param." + name] = p
    res["g." + name] = p.grad
save(out, {k: v.detach().float() for k, v in res.items()}, metadata={"count": len(list(model.parameters()))})
