"""PyTorch peer of `attn bench train` / `attn bench decode` for the rnnsearch
shapes (lean, tutorial): the same rnnsearch (bidirectional GRU encoder over
packed sequences, decoder GRUCell whose previous state is the additive-attention
query, keys projected once per batch, [embedding; context] as decoder input,
tanh readout of [s; c; embedding] for all steps at once, then the vocabulary
projection; label smoothing 0.1, dropout 0.2), the same shapes and the same
batch lengths as src/attn/bench/bench_mt.cpp.

train:  forward + backward + clip_grad_norm_(1.0) + Adam step on one batch -> target tokens/s
decode: greedy (argmax) or beam search (top-k over beam x vocab, states reordered
        with index_select) for 1.5 * max source length + 5 steps -> sentences/s
(the batch, the searches and the timing are mt_common.py's, shared with torch_luong.py)
"""
import math

import torch
import torch.nn as nn

import mt_common
from mt_common import PAD, V

a = mt_common.parser(["lean", "tutorial"]).parse_args()
mt_common.setup(a)

E, Hd, R = 256, 512, 256
He, A = (512, 512) if a.model == "tutorial" else (256, 256)


class RNNSearch(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.Embedding(V, E, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(V, E, padding_idx=PAD)
        self.encoder = nn.GRU(E, He, batch_first=True, bidirectional=True)
        self.init = nn.Linear(2 * He, Hd)
        self.key = nn.Linear(2 * He, A)
        self.query = nn.Linear(Hd, A, bias=False)
        self.v = nn.Parameter(torch.empty(A).uniform_(-1 / math.sqrt(A), 1 / math.sqrt(A)))
        self.decoder = nn.GRUCell(E + 2 * He, Hd)
        self.readout = nn.Linear(Hd + 2 * He + E, R)
        self.out = nn.Linear(R, V)
        self.drop = nn.Dropout(0.2)

    def encode(self, src, lengths):
        """-> memory (H [B, S, 2He], keys [B, S, A], mask [B, S]), state (s0 [B, Hd],)"""
        H, mask, mean = mt_common.encode_packed(self.encoder, self.drop(self.src_embed(src)), lengths)
        return (H, self.key(H), mask), (torch.tanh(self.init(mean)),)

    def attend(self, s, memory):
        H, keys, mask = memory
        return mt_common.attend((self.v * torch.tanh(self.query(s).unsqueeze(1) + keys)).sum(-1), mask, H)

    def loss(self, src, lengths, tgt_in, tgt_out):
        memory, (s,) = self.encode(src, lengths)
        emb = self.drop(self.tgt_embed(tgt_in))  # [B, T, E]
        states, ctxs = [], []
        for t in range(tgt_in.size(1)):
            c = self.attend(s, memory)
            s = self.decoder(torch.cat([emb[:, t], c], -1), s)
            states.append(s)
            ctxs.append(c)
        r = self.drop(torch.tanh(self.readout(torch.cat([torch.stack(states, 1), torch.stack(ctxs, 1), emb], -1))))
        return mt_common.smoothed_loss(self.out(r), tgt_out)

    def step(self, memory, state, prev):
        (s,) = state
        emb = self.tgt_embed(prev)
        c = self.attend(s, memory)
        s = self.decoder(torch.cat([emb, c], -1), s)
        logits = self.out(torch.tanh(self.readout(torch.cat([s, c, emb], -1))))
        return torch.log_softmax(logits, -1), (s,)


mt_common.run(RNNSearch(), a)
