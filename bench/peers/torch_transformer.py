"""PyTorch peer of `attn bench train` / `attn bench decode --model transformer`: the
Transformer of configs/multi30k-transformer.yaml, as attn builds it
(src/attn/models/transformer/transformer.h), from PyTorch's own layers:

  embedding  one table [V, E] for source, target and output (tied_embeddings: all),
             x = sqrt(E) emb(ids) + sinusoids (sec. 3.5 of Vaswani et al.), dropout
  encoder    nn.TransformerEncoder of nn.TransformerEncoderLayer (batch_first, norm_first,
             relu, dropout 0.2 on the residuals, the feed-forward and the attention weights)
             and a final LayerNorm, as pre-norm needs
  decoder    nn.TransformerDecoder of nn.TransformerDecoderLayer, the same options, final LayerNorm
  output     logits = h emb^T + output.bias

Vocabulary 8000, E 256, 3 + 3 layers, 4 heads, feed-forward 1024: attn's preset.

train:  forward + backward + clip_grad_norm_(1.0) + Adam (mt_common.run) through the layers' own
        forward (causal target mask, source key padding)
decode: the encoder once (in eval under inference_mode the encoder layers take PyTorch's fast
        path, torch._transformer_encoder_layer_fwd), then incremental decoding as fairseq's
        does: step() runs one position per row through the decoder layers' own weights
        (in_proj_weight split into q / k / v, out_proj, F._scaled_dot_product_attention,
        PyTorch 1.13's name for F.scaled_dot_product_attention), appending that position's
        keys and values to a per-layer cache; the cross-attention's keys and values are
        computed once per sentence in encode() and repeated per beam row by mt_common.beam;
        the cache is state, reordered with index_select by the beam search.
tests/scripts/torch_transformer_peer_test.py holds step() to the full-prefix forward.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import mt_common
from mt_common import PAD, V


def sinusoids(P, E):
    """[P, E]: sin at the even features, cos at the odd ones (attn's nn::PositionalEncoding)."""
    pos = torch.arange(P, dtype=torch.float32)[:, None]
    div = torch.pow(10000.0, torch.arange(0, E, 2, dtype=torch.float32) / E)
    pe = torch.zeros(P, E)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / div), torch.cos(pos / div)
    return pe


def heads(x, H):
    """[N, L, E] -> [N, H, L, E / H]"""
    N, L, E = x.shape
    return x.view(N, L, H, E // H).transpose(1, 2)


def attend(q, k, v, mask, attn):
    """q [N, H, 1, hd] over k, v [N, H, L, hd] (mask [N, 1, 1, L] True at valid keys, or None)
    -> attn.out_proj of the heads joined [N, 1, E]"""
    o, _ = F._scaled_dot_product_attention(q, k, v, mask, 0.0, False, False)
    return attn.out_proj(o.transpose(1, 2).reshape(q.size(0), 1, -1))


class Transformer(nn.Module):
    def __init__(self, V=V, E=256, H=4, F=1024, layers=3, dropout=0.2, P=1024):
        super().__init__()
        self.E, self.H = E, H
        self.embed = nn.Embedding(V, E, padding_idx=PAD)
        opts = dict(d_model=E, nhead=H, dim_feedforward=F, dropout=dropout, activation="relu", batch_first=True,
                    norm_first=True)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**opts), layers, norm=nn.LayerNorm(E))
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**opts), layers, norm=nn.LayerNorm(E))
        self.output = nn.Module()
        self.output.bias = nn.Parameter(torch.zeros(V))
        self.register_buffer("pe", sinusoids(P, E))
        self.drop = nn.Dropout(dropout)

    def embed_at(self, ids, start=0):
        """ids [B, L] -> sqrt(E) emb(ids) + positions start .. start + L - 1, dropout: [B, L, E]"""
        return self.drop(self.embed(ids) * math.sqrt(self.E) + self.pe[start:start + ids.size(1)])

    def logits(self, h):
        return h @ self.embed.weight.t() + self.output.bias

    def run_encoder(self, src, lengths):
        """-> memory [B, S, E], key padding mask [B, S] (True at padding)"""
        pad = torch.arange(src.size(1))[None, :] >= lengths[:, None]
        return self.encoder(self.embed_at(src), src_key_padding_mask=pad), pad

    def loss(self, src, lengths, tgt_in, tgt_out):
        memory, pad = self.run_encoder(src, lengths)
        T = tgt_in.size(1)
        causal = torch.full((T, T), float("-inf")).triu(1)
        h = self.decoder(self.embed_at(tgt_in), memory, tgt_mask=causal, memory_key_padding_mask=pad)
        return mt_common.smoothed_loss(self.logits(h), tgt_out)

    def encode(self, src, lengths):
        """-> memory (valid [B, 1, 1, S], then per layer cross k, v [B, H, S, hd]),
        state (position [B], then per layer self k, v [B, H, 0, hd]: the empty caches)"""
        memory, pad = self.run_encoder(src, lengths)
        B, E = src.size(0), self.E
        cross, cache = [], []
        for layer in self.decoder.layers:
            w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            kv = F.linear(memory, w[E:], b[E:])  # [B, S, 2E]
            cross += [heads(kv[..., :E], self.H), heads(kv[..., E:], self.H)]
            cache += [memory.new_zeros(B, self.H, 0, E // self.H)] * 2
        return (~pad[:, None, None, :], *cross), (torch.zeros(B, dtype=torch.long), *cache)

    def step(self, memory, state, prev):
        """prev [N] at position t = state[0] -> (log-probabilities [N, V], state with t + 1 and
        every layer's keys and values of position t appended)"""
        valid, cross = memory[0], memory[1:]
        pos, cache = state[0], state[1:]
        x = self.embed_at(prev[:, None], int(pos[0]))  # [N, 1, E]
        new_cache = []
        for i, layer in enumerate(self.decoder.layers):
            sa = layer.self_attn
            qkv = F.linear(layer.norm1(x), sa.in_proj_weight, sa.in_proj_bias)  # [N, 1, 3E]
            q, k, v = (heads(y, self.H) for y in qkv.chunk(3, -1))
            k, v = torch.cat([cache[2 * i], k], 2), torch.cat([cache[2 * i + 1], v], 2)
            new_cache += [k, v]
            x = x + attend(q, k, v, None, sa)
            ca = layer.multihead_attn
            q = heads(F.linear(layer.norm2(x), ca.in_proj_weight[:self.E], ca.in_proj_bias[:self.E]), self.H)
            x = x + attend(q, cross[2 * i], cross[2 * i + 1], valid, ca)
            x = x + layer.linear2(F.relu(layer.linear1(layer.norm3(x))))
        lp = torch.log_softmax(self.logits(self.decoder.norm(x[:, 0])), -1)
        return lp, (pos + 1, *new_cache)


if __name__ == "__main__":
    a = mt_common.parser(["transformer"]).parse_args()
    mt_common.setup(a)
    mt_common.run(Transformer(), a)
