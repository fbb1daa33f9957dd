"""PyTorch oracle for tests/test_rnn.cpp: torch.nn.GRU / torch.nn.LSTM on a
padded batch (pack_padded_sequence with enforce_sorted=False, then
pad_packed_sequence with total_length), forward and the gradient of a fixed
random linear functional of the outputs w.r.t. the input, h0 (c0) and every
weight.

The inputs are drawn in float32 and written as such; the reference itself is
computed in float64 from exactly those values, so the C++ side is compared to
the exact result, not to another float32 rounding.

usage: rnn.py OUT.safetensors CELL LAYERS BIDIR BATCH SEQ_LEN IN HIDDEN WITH_H0 SEED
  CELL gru|lstm, BIDIR 0|1, WITH_H0 0|1 (1: random initial states that get gradients)
Writes: x, lengths, [h0, c0], wy, wh, [wc], the module's parameters by torch
name, out, h_n, [c_n], and grad.x, [grad.h0, grad.c0], grad.<param name>.
"""
import sys

import numpy as np
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import st


def main():
    out_path = sys.argv[1]
    cell, layers, bidir, batch, seq_len, insz, hidden, with_h0, seed = sys.argv[2:11]
    layers, bidir, batch, seq_len = int(layers), bool(int(bidir)), int(batch), int(seq_len)
    insz, hidden, with_h0, seed = int(insz), int(hidden), bool(int(with_h0)), int(seed)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    dirs = 2 if bidir else 1
    is_lstm = cell == "lstm"

    # Different lengths in 1..seq_len, unsorted. Even seeds: one sequence fills
    # seq_len; odd seeds: the longest is seq_len - 1, so that the padding to
    # total_length after every sequence is exercised too.
    lengths = rng.integers(1, seq_len, size=batch)
    lengths[rng.integers(0, batch)] = seq_len - seed % 2
    mod = (torch.nn.LSTM if is_lstm else torch.nn.GRU)(insz, hidden, num_layers=layers, bidirectional=bidir,
                                                        batch_first=True)
    f32 = {k: v.detach().float().clone() for k, v in mod.named_parameters()}
    mod = mod.double()

    x32 = torch.randn(batch, seq_len, insz)
    h032 = torch.randn(layers * dirs, batch, hidden) * 0.5
    c032 = torch.randn(layers * dirs, batch, hidden) * 0.5
    wy = torch.randn(batch, seq_len, dirs * hidden)
    wh = torch.randn(layers * dirs, batch, hidden)
    wc = torch.randn(layers * dirs, batch, hidden)

    x = x32.double().requires_grad_()
    h0 = h032.double().requires_grad_()
    c0 = c032.double().requires_grad_()
    packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    if is_lstm:
        out, (h_n, c_n) = mod(packed, (h0, c0) if with_h0 else None)
    else:
        out, h_n = mod(packed, h0 if with_h0 else None)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=seq_len)
    loss = (out * wy.double()).sum() + (h_n * wh.double()).sum()
    if is_lstm:
        loss = loss + (c_n * wc.double()).sum()
    loss.backward()

    t = {"x": x32, "lengths": torch.tensor(lengths, dtype=torch.float32), "wy": wy, "wh": wh,
         "out": out, "h_n": h_n, "grad.x": x.grad}
    if is_lstm:
        t.update({"wc": wc, "c_n": c_n})
    if with_h0:
        t.update({"h0": h032, "grad.h0": h0.grad})
        if is_lstm:
            t.update({"c0": c032, "grad.c0": c0.grad})
    for name, p in mod.named_parameters():
        t[name] = f32[name]
        t["grad." + name] = p.grad
    st.save(out_path, t)


if __name__ == "__main__":
    main()
