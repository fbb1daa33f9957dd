"""What the translation peers (torch_rnnsearch.py, torch_luong.py) share: the
command line, the synthetic batch of src/attn/bench/bench_mt.cpp, the encoder
over packed sequences, masked attention, greedy and beam search over a model's
encode/step, and the timed training step and search.

A model passed here has
  loss(src, lengths, tgt_in, tgt_out) -> scalar (label smoothing 0.1, PAD ignored)
  encode(src, lengths) -> (memory, state): tuples of tensors whose first dimension
      is the batch [B, ...]; beam search repeats every one of them K times
  step(memory, state, prev [N]) -> (log-probabilities [N, V], state)
"""
import json
import resource

import torch
import torch.nn as nn
import torch.nn.functional as F

import common

V = 8000  # both vocabularies of the benchmark shapes
PAD, BOS, EOS = 0, 1, 2


def parser(shapes):
    """common.parser() plus --mode, --model (one of `shapes`), --batch, --beam."""
    p = common.parser()
    p.add_argument("--mode", choices=["train", "decode"], default="train")
    p.add_argument("--model", choices=shapes, default=shapes[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--beam", type=int, default=1)
    p.add_argument("--lengths", choices=["mixed", "uniform"], default="mixed")
    p.add_argument("--quantize", choices=["none", "int8"], default="none",
                   help="decode: int8 = torch.ao.quantization.quantize_dynamic on the Linear, LSTM / GRU "
                        "(and their cells) layers, on the faster of the quantized engines")
    return p


DYNAMIC_INT8_LAYERS = {nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell}


def dynamic_int8(model, engine):
    """PyTorch's own int8 inference: weights quantised per tensor once, activations per
    call (dynamic quantisation), on quantized engine `engine` ("onednn" or "qnnpack").
    Only modules are replaced: a model that multiplies by raw tensors (F.linear on a
    parameter, as the Transformer peer's cache does) keeps those products in fp32."""
    torch.backends.quantized.engine = engine
    return torch.ao.quantization.quantize_dynamic(model, DYNAMIC_INT8_LAYERS, dtype=torch.qint8)


def rss_bytes():
    """the resident set now (/proc/self/statm)"""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def peak_rss_bytes():
    """the process's peak resident set so far (ru_maxrss, KiB on Linux)"""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def setup(a):
    """threads and seed; call before building the model: training's memory is counted from here"""
    torch.set_num_threads(a.threads)  # it defaults to 1 thread on these machines
    torch.manual_seed(1)
    a.rss_at_setup = rss_bytes()


def encode_packed(rnn, emb, lengths):
    """emb [B, S, E] through the bidirectional `rnn` (batch_first) over packed
    sequences -> annotations H [B, S, 2He] (zeros past each length), mask [B, S]
    (True at valid positions), the mean of H over the valid positions [B, 2He]."""
    packed = nn.utils.rnn.pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
    out, _ = rnn(packed)
    H, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    mask = torch.arange(H.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
    return H, mask, H.sum(1) / lengths.unsqueeze(1).float()


def attend(scores, mask, H):
    """scores [B, S] -> softmax over the valid positions, context sum_s a_s H_s [B, 2He]."""
    a = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    return torch.bmm(a.unsqueeze(1), H).squeeze(1)


def smoothed_loss(logits, tgt_out):
    """logits [B, T, V], tgt_out [B, T] -> mean cross entropy with label smoothing 0.1, PAD ignored."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1), ignore_index=PAD,
                           label_smoothing=0.1)


@torch.inference_mode()
def greedy(model, src, lengths, max_len):
    memory, state = model.encode(src, lengths)
    prev = torch.full((src.size(0),), BOS, dtype=torch.long)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    out = []
    for _ in range(max_len):
        lp, state = model.step(memory, state, prev)
        prev = lp.argmax(-1)
        out.append(prev)
        done |= prev == EOS
        if done.all():
            break
    return torch.stack(out, 1)


@torch.inference_mode()
def beam(model, src, lengths, K, max_len):
    """Top-k over beam x vocabulary each step, the states reordered with index_select."""
    B = src.size(0)
    memory, state = model.encode(src, lengths)
    rep = torch.arange(B).repeat_interleave(K)
    memory = tuple(m[rep] for m in memory)
    state = tuple(s[rep] for s in state)
    scores = torch.full((B, K), float("-inf"))
    scores[:, 0] = 0
    prev = torch.full((B * K,), BOS, dtype=torch.long)
    finished = torch.zeros(B * K, dtype=torch.bool)
    tokens = []
    for _ in range(max_len):
        lp, state = model.step(memory, state, prev)
        vocab = lp.size(1)
        lp[finished] = float("-inf")
        lp[finished, EOS] = 0
        cand = (scores.view(-1, 1) + lp).view(B, K * vocab)
        scores, idx = cand.topk(K, -1)
        parent = (idx // vocab) + torch.arange(B).unsqueeze(1) * K
        prev = (idx % vocab).view(-1)
        parent = parent.view(-1)
        state = tuple(s.index_select(0, parent) for s in state)
        finished = finished.index_select(0, parent) | (prev == EOS)
        tokens = [t.index_select(0, parent) for t in tokens] + [prev]
        if finished.all():
            break
    return torch.stack(tokens, 1)


def make_batch(B, uniform=False):
    """bench_mt.cpp's recipe: lengths 8 + (7 b mod 13) (uniform: 14 each), random ids >= 4 -> src [B, S],
    lengths [B], tgt_in [B, S + 1] (BOS first), tgt_out [B, S + 1] (EOS last), PAD after."""
    g = torch.Generator().manual_seed(7)
    lengths = torch.tensor([14 if uniform else 8 + (7 * b) % 13 for b in range(B)])
    S = int(lengths.max())
    src = torch.zeros(B, S, dtype=torch.long)
    tgt_in = torch.zeros(B, S + 1, dtype=torch.long)
    tgt_out = torch.zeros(B, S + 1, dtype=torch.long)
    for b in range(B):
        L = int(lengths[b])
        src[b, :L] = torch.randint(4, V, (L,), generator=g)
        tgt = torch.randint(4, V, (L,), generator=g)
        tgt_in[b, 0] = BOS
        tgt_in[b, 1:L + 1] = tgt
        tgt_out[b, :L] = tgt
        tgt_out[b, L] = EOS
    return src, lengths, tgt_in, tgt_out


def run_dynamic_int8(model, a):
    """decode with the model dynamically quantised, on each quantized engine this torch
    has; prints the faster engine's line ({"compute": "int8", "engine": ...})."""
    import contextlib
    import io
    if a.mode != "decode":
        raise SystemExit("--quantize int8: decode only")
    model.eval()
    a.quantize = "none"
    best = None
    for engine in [e for e in torch.backends.quantized.supported_engines if e in ("onednn", "fbgemm", "qnnpack")]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            run(dynamic_int8(model, engine), a)
        line = json.loads(out.getvalue().strip().splitlines()[-1])
        line.update({"compute": "int8", "engine": engine})
        if best is None or line["sents_per_s"] > best["sents_per_s"]:
            best = line
    common.emit(best)


def run(model, a):
    """train: forward + backward + clip_grad_norm_(1.0) + Adam step on one batch -> target tokens/s;
    decode: greedy (beam 1) or beam search for 1.5 * max source length + 5 steps -> sentences/s.
    Prints one JSON line. Memory, from the peak resident set (ru_maxrss): training's
    peak_rss_delta_bytes counts from setup() (the model, gradients, Adam's moments, the steps);
    decoding's peak_bytes_per_sent from the start of run() (the searches), per sentence."""
    if a.quantize == "int8":
        return run_dynamic_int8(model, a)
    src, lengths, tgt_in, tgt_out = make_batch(a.batch, a.lengths == "uniform")
    record = {"impl": "torch", "version": torch.__version__, "model": a.model, "batch": a.batch, "lengths": a.lengths}
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
        common.emit({"bench": "train", **record, "threads": a.threads,
                     "params": sum(p.numel() for p in model.parameters()), "tgt_tokens": tokens, "step_ms": ms,
                     "tgt_tokens_per_s": tokens / (ms / 1000), "max_rss_bytes": peak_rss_bytes(),
                     "peak_rss_delta_bytes": peak_rss_bytes() - a.rss_at_setup})
    else:
        model.eval()
        max_len = int(1.5 * src.size(1)) + 5
        rss_before = rss_bytes()
        steps = []

        def search():
            if a.beam == 1:
                out = greedy(model, src, lengths, max_len)
            else:
                out = beam(model, src, lengths, a.beam, max_len)
            steps[:] = [out.size(1)]  # every row of the batch runs every step

        reps = max(3, a.repeats // (1 if a.batch == 1 else 2))
        ms = common.median_ms(search, reps, warmup=1)
        common.emit({"bench": "decode", **record, "beam": a.beam, "threads": a.threads, "ms": ms,
                     "sents_per_s": a.batch / (ms / 1000), "row_steps": a.batch * a.beam * steps[0],
                     "peak_bytes_per_sent": (peak_rss_bytes() - rss_before) / a.batch})
