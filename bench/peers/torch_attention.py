"""PyTorch peer of `attn bench attention`, same shapes and protocol:
  torch-manual: softmax(q k^T / sqrt(d) + mask) v, forward and forward+backward
  torch-mha:    torch.nn.MultiheadAttention(E = H*D, H, batch_first) self-attention
  additive_step torch-cached / torch-projected: the Bahdanau decoder step,
                key projection cached once or recomputed every step."""
import math

import torch

import common

p = common.parser()
p.add_argument("--lens", default="32,128,512,2048", help="sequence lengths ('' for none)")
p.add_argument("--causal", choices=("both", "no", "yes"), default="both")
p.add_argument("--additive", type=int, default=1, help="1: also the additive decoder step")
a = p.parse_args()
torch.set_num_threads(a.threads)  # it defaults to 1 thread on these machines
torch.manual_seed(1)


def reps_for(B, H, L):  # as attn's bench_attention.cpp
    return 3 if B * H * L * L > 1e9 else 10 * a.repeats if L <= 128 else a.repeats


def manual_attention(q, k, v, causal):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def row(impl, B, H, L, D, causal, fwd, fb):
    flops = 4.0 * B * H * L * L * D * (0.5 if causal else 1.0)
    common.emit({"bench": "attention", "impl": impl, "B": B, "H": H, "Lq": L, "Lk": L, "D": D, "causal": causal,
                 "threads": a.threads, "fwd_ms": fwd, "fwdbwd_ms": fb, "gflops": flops / (fwd * 1e6),
                 "peak_bytes": None})


def bench_manual(B, H, L, D, causal):
    q, k, v, g = (torch.randn(B, H, L, D) for _ in range(4))
    reps = reps_for(B, H, L)
    with torch.no_grad():
        fwd = common.median_ms(lambda: manual_attention(q, k, v, causal), reps, 1)
    qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))

    def step():
        manual_attention(qq, kk, vv, causal).backward(g)
        qq.grad = kk.grad = vv.grad = None

    row("torch-manual", B, H, L, D, causal, fwd, common.median_ms(step, reps, 1))


def bench_mha(B, H, L, D, causal):
    E = H * D
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True)
    x, g = torch.randn(B, L, E), torch.randn(B, L, E)
    mask = torch.ones(L, L, dtype=torch.bool).triu(1) if causal else None
    reps = reps_for(B, H, L)
    with torch.no_grad():
        fwd = common.median_ms(lambda: mha(x, x, x, attn_mask=mask, need_weights=False), reps, 1)
    xx = x.clone().requires_grad_()

    def step():
        mha(xx, xx, xx, attn_mask=mask, need_weights=False)[0].backward(g)
        mha.zero_grad()
        xx.grad = None

    row("torch-mha", B, H, L, D, causal, fwd, common.median_ms(step, reps, 1))


def bench_additive(B=64, Lk=50, Qd=1024, A=512, Dv=1024):
    query, keys = torch.randn(B, Qd), torch.randn(B, Lk, A)
    values = torch.randn(B, Lk, Dv)
    W1 = torch.nn.Linear(Qd, A, bias=False)
    W2 = torch.nn.Linear(A, A)
    v = torch.nn.Linear(A, 1, bias=False)
    lengths = torch.tensor([Lk - b % 7 for b in range(B)])
    pad = torch.arange(Lk)[None, :] >= lengths[:, None]

    def step(kp):
        e = v(torch.tanh(W1(query)[:, None, :] + kp)).squeeze(-1)
        w = torch.softmax(e.masked_fill(pad, float("-inf")), -1)
        return torch.bmm(w[:, None, :], values).squeeze(1), w

    with torch.no_grad():
        kp = W2(keys)
        for impl, f in (("torch-cached", lambda: step(kp)), ("torch-projected", lambda: step(W2(keys)))):
            common.emit({"bench": "additive_step", "impl": impl, "B": B, "Lk": Lk, "q_dim": Qd, "attn_dim": A,
                         "v_dim": Dv, "threads": a.threads, "fwd_ms": common.median_ms(f, 10 * a.repeats)})


causals = {"both": (False, True), "no": (False,), "yes": (True,)}[a.causal]
for L in (int(x) for x in a.lens.split(",") if x):
    for causal in causals:
        bench_manual(4, 8, L, 64, causal)
        bench_mha(4, 8, L, 64, causal)
if a.additive:
    bench_additive()
