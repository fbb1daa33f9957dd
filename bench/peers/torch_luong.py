"""PyTorch peer of `attn bench train` / `attn bench decode` for the luong shape:
Luong et al.'s global attention with input feeding, in the style of OpenNMT-py's
default RNN model (its InputFeedRNNDecoder with GlobalAttention, attn_type general),
with the shapes, initial state and computations of src/attn/models/luong/luong.cpp:

  encoder  embedding 256 (dropout 0.2), bidirectional LSTM 256 per direction over
           packed sequences -> H [B, S, 512]
  init     h_0 = tanh(W mean_s H_s + b), c_0 = 0, h~_0 = 0 (OpenNMT-py would bridge
           the encoder's final states instead; attn's luong starts this way)
  step t   h_t = LSTMCell([E y_{t-1} (dropout 0.2); h~_{t-1}], (h, c))   input feeding
           score_s = h_t . (W_a H_s) / sqrt(Hd): general, scaled as attn's (models/luong/luong.h
           says why); W_a H projected once per batch, as attn does (OpenNMT-py's
           linear_in projects h_t every step, unscaled)
           a_t = softmax over the valid positions, c_t = sum_s a_ts H_s
           h~_t = dropout(tanh(W_c [c_t; h_t]))  W_c without bias, as OpenNMT-py for general
  output   W_s h~_t + b for all steps at once (training: label smoothing 0.1), log_softmax per step (search)

Vocabulary 8000, decoder LSTM 512, one layer each side, the batch of
src/attn/bench/bench_mt.cpp; training step, searches and timing are mt_common.py's.
"""
import math

import torch
import torch.nn as nn

import mt_common
from mt_common import PAD, V


class Luong(nn.Module):
    """vocabulary V (both sides), embedding E, encoder LSTM He per direction, decoder LSTM Hd
    (tests/oracle/luong_peer.py builds a small one to hold it to attn's luong)"""

    def __init__(self, V=V, E=256, He=256, Hd=512, dropout=0.2):
        super().__init__()
        self.src_embed = nn.Embedding(V, E, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(V, E, padding_idx=PAD)
        self.encoder = nn.LSTM(E, He, batch_first=True, bidirectional=True)
        self.init = nn.Linear(2 * He, Hd)
        self.general = nn.Linear(2 * He, Hd, bias=False)  # W_a
        self.decoder = nn.LSTMCell(E + Hd, Hd)
        self.combine = nn.Linear(2 * He + Hd, Hd, bias=False)  # W_c
        self.out = nn.Linear(Hd, V)
        self.drop = nn.Dropout(dropout)

    def encode(self, src, lengths):
        """-> memory (H [B, S, 2He], keys W_a H [B, S, Hd], mask [B, S]), state (h, c, h~) [B, Hd] each"""
        H, mask, mean = mt_common.encode_packed(self.encoder, self.drop(self.src_embed(src)), lengths)
        h = torch.tanh(self.init(mean))
        keys = self.general(H) / math.sqrt(self.general.out_features)
        return (H, keys, mask), (h, torch.zeros_like(h), torch.zeros_like(h))

    def decode(self, memory, state, emb):
        """emb [N, E], state at t-1 -> state at t"""
        H, keys, mask = memory
        h, c, feed = state
        h, c = self.decoder(torch.cat([emb, feed], -1), (h, c))
        context = mt_common.attend(torch.bmm(keys, h.unsqueeze(2)).squeeze(2), mask, H)
        return h, c, self.drop(torch.tanh(self.combine(torch.cat([context, h], -1))))

    def loss(self, src, lengths, tgt_in, tgt_out):
        memory, state = self.encode(src, lengths)
        emb = self.drop(self.tgt_embed(tgt_in))  # [B, T, E]
        feeds = []
        for t in range(tgt_in.size(1)):
            state = self.decode(memory, state, emb[:, t])
            feeds.append(state[2])
        return mt_common.smoothed_loss(self.out(torch.stack(feeds, 1)), tgt_out)

    def step(self, memory, state, prev):
        state = self.decode(memory, state, self.tgt_embed(prev))
        return torch.log_softmax(self.out(state[2]), -1), state


if __name__ == "__main__":
    a = mt_common.parser(["luong"]).parse_args()
    mt_common.setup(a)
    mt_common.run(Luong(), a)
