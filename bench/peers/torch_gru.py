"""PyTorch peer of `attn bench gru`: torch.nn.GRU, batch_first, same shapes,
forward (no grad) and forward + backward of sum(output * R)."""
import torch

import common

p = common.parser()
p.add_argument("--batch", type=int, default=64)
p.add_argument("--hidden", type=int, default=512)
p.add_argument("--seq-len", type=int, default=30)
a = p.parse_args()
torch.set_num_threads(a.threads)  # it defaults to 1 thread on these machines
torch.manual_seed(1)
gru = torch.nn.GRU(a.hidden, a.hidden, batch_first=True)
x = torch.randn(a.batch, a.seq_len, a.hidden, requires_grad=True)
r = torch.randn(a.batch, a.seq_len, a.hidden)


def fwd():
    with torch.no_grad():
        gru(x)


def fwdbwd():
    gru.zero_grad()
    x.grad = None
    out, _ = gru(x)
    out.backward(r)


common.emit({"bench": "gru", "impl": "torch", "version": torch.__version__, "batch": a.batch, "hidden": a.hidden,
             "seq_len": a.seq_len, "threads": a.threads, "fwd_ms": common.median_ms(fwd, a.repeats),
             "fwdbwd_ms": common.median_ms(fwdbwd, a.repeats)})
