"""PyTorch peer of `attn bench train` / `attn bench decode`: the same rnnsearch
(bidirectional GRU encoder over packed sequences, decoder GRUCell whose
previous state is the additive-attention query, keys projected once per batch,
[embedding; context] as decoder input, tanh readout of [s; c; embedding] for all
steps at once, then the vocabulary projection; label smoothing 0.1, dropout 0.2),
the same shapes and the same batch lengths as src/attn/bench/bench_mt.cpp.

train:  forward + backward + clip_grad_norm_(1.0) + Adam step on one batch -> target tokens/s
decode: greedy (argmax) or beam search (top-k over beam x vocab, states reordered
        with index_select) for 1.5 * max source length + 5 steps -> sentences/s
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import common

p = common.parser()
p.add_argument("--mode", choices=["train", "decode"], default="train")
p.add_argument("--model", choices=["lean", "tutorial"], default="lean")
p.add_argument("--batch", type=int, default=64)
p.add_argument("--beam", type=int, default=1)
a = p.parse_args()
torch.set_num_threads(a.threads)  # it defaults to 1 thread on these machines
torch.manual_seed(1)

V, E, Hd, R = 8000, 256, 512, 256
He, A = (512, 512) if a.model == "tutorial" else (256, 256)
PAD, BOS, EOS = 0, 1, 2


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
        emb = self.drop(self.src_embed(src))
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.encoder(packed)
        H, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)  # [B, S, 2He]
        mask = torch.arange(H.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
        s0 = torch.tanh(self.init(H.sum(1) / lengths.unsqueeze(1).float()))
        return H, self.key(H), mask, s0

    def attend(self, s, H, keys, mask):
        e = (self.v * torch.tanh(self.query(s).unsqueeze(1) + keys)).sum(-1)  # [B, S]
        a = torch.softmax(e.masked_fill(~mask, float("-inf")), -1)
        return torch.bmm(a.unsqueeze(1), H).squeeze(1), a

    def loss(self, src, lengths, tgt_in, tgt_out):
        H, keys, mask, s = self.encode(src, lengths)
        emb = self.drop(self.tgt_embed(tgt_in))  # [B, T, E]
        states, ctxs = [], []
        for t in range(tgt_in.size(1)):
            c, _ = self.attend(s, H, keys, mask)
            s = self.decoder(torch.cat([emb[:, t], c], -1), s)
            states.append(s)
            ctxs.append(c)
        r = self.drop(torch.tanh(self.readout(torch.cat([torch.stack(states, 1), torch.stack(ctxs, 1), emb], -1))))
        logits = self.out(r)
        return F.cross_entropy(logits.view(-1, V), tgt_out.view(-1), ignore_index=PAD, label_smoothing=0.1)

    def step(self, s, prev, H, keys, mask):
        emb = self.tgt_embed(prev)
        c, _ = self.attend(s, H, keys, mask)
        s = self.decoder(torch.cat([emb, c], -1), s)
        logits = self.out(torch.tanh(self.readout(torch.cat([s, c, emb], -1))))
        return torch.log_softmax(logits, -1), s

    @torch.no_grad()
    def greedy(self, src, lengths, max_len):
        H, keys, mask, s = self.encode(src, lengths)
        prev = torch.full((src.size(0),), BOS, dtype=torch.long)
        done = torch.zeros(src.size(0), dtype=torch.bool)
        out = []
        for _ in range(max_len):
            lp, s = self.step(s, prev, H, keys, mask)
            prev = lp.argmax(-1)
            out.append(prev)
            done |= prev == EOS
            if done.all():
                break
        return torch.stack(out, 1)

    @torch.no_grad()
    def beam(self, src, lengths, K, max_len):
        B = src.size(0)
        H, keys, mask, s = self.encode(src, lengths)
        rep = torch.arange(B).repeat_interleave(K)
        H, keys, mask, s = H[rep], keys[rep], mask[rep], s[rep]
        scores = torch.full((B, K), float("-inf"))
        scores[:, 0] = 0
        prev = torch.full((B * K,), BOS, dtype=torch.long)
        finished = torch.zeros(B * K, dtype=torch.bool)
        tokens = []
        for _ in range(max_len):
            lp, s = self.step(s, prev, H, keys, mask)
            lp[finished] = float("-inf")
            lp[finished, EOS] = 0
            cand = (scores.view(-1, 1) + lp).view(B, K * V)
            scores, idx = cand.topk(K, -1)
            parent = (idx // V) + torch.arange(B).unsqueeze(1) * K
            prev = (idx % V).view(-1)
            parent = parent.view(-1)
            s = s.index_select(0, parent)
            finished = finished.index_select(0, parent) | (prev == EOS)
            tokens = [t.index_select(0, parent) for t in tokens] + [prev]
            if finished.all():
                break
        return torch.stack(tokens, 1)


def lengths_of(B):
    return torch.tensor([8 + (7 * b) % 13 for b in range(B)])


model = RNNSearch()
g = torch.Generator().manual_seed(7)
lengths = lengths_of(a.batch)
S = int(lengths.max())
src = torch.zeros(a.batch, S, dtype=torch.long)
tgt_in = torch.zeros(a.batch, S + 1, dtype=torch.long)
tgt_out = torch.zeros(a.batch, S + 1, dtype=torch.long)
for b in range(a.batch):
    L = int(lengths[b])
    src[b, :L] = torch.randint(4, V, (L,), generator=g)
    tgt = torch.randint(4, V, (L,), generator=g)
    tgt_in[b, 0] = BOS
    tgt_in[b, 1:L + 1] = tgt
    tgt_out[b, :L] = tgt
    tgt_out[b, L] = EOS
params = sum(p.numel() for p in model.parameters())

if a.mode == "train":
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    tokens = int((tgt_out != PAD).sum())

    def step():
        opt.zero_grad()
        loss = model.loss(src, lengths, tgt_in, tgt_out)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    ms = common.median_ms(step, a.repeats)
    common.emit({"bench": "train", "impl": "torch", "version": torch.__version__, "model": a.model, "batch": a.batch,
                 "threads": a.threads, "params": params, "tgt_tokens": tokens, "step_ms": ms,
                 "tgt_tokens_per_s": tokens / (ms / 1000)})
else:
    model.eval()
    max_len = int(1.5 * S) + 5

    def run():
        if a.beam == 1:
            model.greedy(src, lengths, max_len)
        else:
            model.beam(src, lengths, a.beam, max_len)

    reps = max(3, a.repeats // (1 if a.batch == 1 else 2))
    ms = common.median_ms(run, reps, warmup=1)
    common.emit({"bench": "decode", "impl": "torch", "version": torch.__version__, "model": a.model, "batch": a.batch,
                 "beam": a.beam, "threads": a.threads, "ms": ms, "sents_per_s": a.batch / (ms / 1000)})
