"""PyTorch reference for attn's whole Transformer model (model.type: transformer;
tests/test_transformer.cpp): loss and every gradient on one batch.

usage: transformer_model.py OUT NORM TIED
  NORM: pre (norm_first, a final LayerNorm after each stack) | post (none)
  TIED: all (one table for source, target and output) | none (three)
The model as attn builds it: x = sqrt(E) emb(ids) + sinusoids, nn.TransformerEncoder /
nn.TransformerDecoder (batch_first, dropout 0, double precision) with source key padding and
a causal decoder, logits = h W^T + b, cross-entropy with ignore_index = pad (0) and label
smoothing 0.1, the mean over the batch's target tokens. Writes the ids and lengths, every
parameter under attn's names (param.<name>), the loss and every gradient (g.<name>).
"""
import math
import sys

import torch

from st import save

out, norm, tied = sys.argv[1:4]
torch.manual_seed(31 + (norm == "pre") * 2 + (tied == "all"))
B, S, T, E, H, F, V, L_enc, L_dec = 3, 9, 7, 16, 4, 24, 29, 2, 2
src_len, tgt_len = [9, 4, 6], [7, 3, 5]  # tgt_len counts BOS + words (tgt_in) = words + EOS (tgt_out)
pre = norm == "pre"


class Output(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(V) * 0.1)
        if tied != "all":
            self.weight = torch.nn.Parameter(torch.randn(V, E) * 0.3)


opts = dict(d_model=E, nhead=H, dim_feedforward=F, dropout=0.0, activation="relu", batch_first=True, norm_first=pre)
model = torch.nn.Module()
if tied == "all":
    model.embed = torch.nn.Embedding(V, E, padding_idx=0)
else:
    model.src_embed = torch.nn.Embedding(V, E, padding_idx=0)
    model.tgt_embed = torch.nn.Embedding(V, E, padding_idx=0)
model.encoder = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**opts), L_enc,
                                            norm=torch.nn.LayerNorm(E) if pre else None, enable_nested_tensor=False)
model.decoder = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(**opts), L_dec,
                                            norm=torch.nn.LayerNorm(E) if pre else None)
model.output = Output()
model = model.double()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "embed" in name:
            p.mul_(1.0 / math.sqrt(E))
            p[0].zero_()
        elif p.dim() == 1 and name != "output.bias":
            p.add_(torch.randn_like(p) * 0.3)  # biases and norm weights away from their 0 / 1 init

pos = torch.arange(64, dtype=torch.float64)[:, None]
div = torch.pow(10000.0, torch.arange(0, E, 2, dtype=torch.float64) / E)
pe = torch.zeros(64, E, dtype=torch.float64)
pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / div), torch.cos(pos / div)

src = torch.zeros(B, S, dtype=torch.long)
tgt_in = torch.zeros(B, T, dtype=torch.long)
tgt_out = torch.zeros(B, T, dtype=torch.long)
for b in range(B):
    src[b, :src_len[b]] = torch.randint(4, V, (src_len[b],))
    words = torch.randint(4, V, (tgt_len[b] - 1,))
    tgt_in[b, 0] = 1
    tgt_in[b, 1:tgt_len[b]] = words
    tgt_out[b, :tgt_len[b] - 1] = words
    tgt_out[b, tgt_len[b] - 1] = 2
src_emb = model.embed if tied == "all" else model.src_embed
tgt_emb = model.embed if tied == "all" else model.tgt_embed
out_w = model.embed.weight if tied == "all" else model.output.weight

kpm = torch.arange(S)[None, :] >= torch.tensor(src_len)[:, None]  # True = padding
causal = torch.ones(T, T).triu(1).bool()
mem = model.encoder(src_emb(src) * math.sqrt(E) + pe[:S], src_key_padding_mask=kpm)
h = model.decoder(tgt_emb(tgt_in) * math.sqrt(E) + pe[:T], mem, tgt_mask=causal, memory_key_padding_mask=kpm)
logits = h @ out_w.t() + model.output.bias
loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1), ignore_index=0,
                                         label_smoothing=0.1)
loss.backward()
res = {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out, "src_lengths": torch.tensor(src_len), "loss": loss.reshape(1)}
for name, p in model.named_parameters():
    res["param." + name] = p
    res["g." + name] = p.grad
save(out, {k: v.detach().double().float() for k, v in res.items()}, metadata={"count": len(list(model.parameters()))})
