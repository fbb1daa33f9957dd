"""The benchmark peer's Transformer (bench/peers/torch_transformer.py) decodes what its own
layers compute: its cached step (one position per call, keys and values appended) must give
the log-probabilities of the full-prefix forward through nn.TransformerDecoder (causal mask,
source key padding), at every step, on a padded batch in float64; and its greedy and beam
searches (mt_common's, which reorder the cache with index_select) must equal the same
searches done by recomputing the whole prefix at every step. Otherwise `attn bench decode
--model transformer` would time attn against a different computation.
Prints the largest difference; exits non-zero on a failure. Run by ctest (peers.torch_transformer).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
import mt_common  # noqa: E402
import torch_transformer  # noqa: E402

torch.manual_seed(5)
V, B, S, STEPS = 29, 3, 6, 7
model = torch_transformer.Transformer(V=V, E=16, H=4, F=24, layers=2, dropout=0.0, P=64).double().eval()
with torch.no_grad():  # away from the zero biases and unit norms of the initialisation
    for p in model.parameters():
        if p.dim() == 1:
            p.add_(torch.randn_like(p) * 0.3)
lengths = torch.tensor([6, 2, 4])
src = torch.randint(4, V, (B, S)) * (torch.arange(S)[None, :] < lengths[:, None])
prefix = torch.cat([torch.full((B, 1), mt_common.BOS), torch.randint(4, V, (B, STEPS - 1))], 1)


def full_prefix_log_probs(model, src, lengths, prefix):
    """the decoder's own forward over prefix [N, t] -> log-probabilities at its last position [N, V]"""
    memory, pad = model.run_encoder(src, lengths)
    t = prefix.size(1)
    causal = torch.full((t, t), float("-inf"), dtype=memory.dtype).triu(1)
    h = model.decoder(model.embed_at(prefix), memory, tgt_mask=causal, memory_key_padding_mask=pad)
    return torch.log_softmax(model.logits(h[:, -1]), -1)


class Recompute:
    """the peer's model decoded without a cache: state = the prefix read so far [N, t]"""

    def __init__(self, model):
        self.model = model

    def encode(self, src, lengths):
        return (src, lengths), (torch.full((src.size(0), 0), mt_common.BOS),)

    def step(self, memory, state, prev):
        prefix = torch.cat([state[0], prev[:, None]], 1)
        return full_prefix_log_probs(self.model, *memory, prefix), (prefix,)


worst = 0.0
with torch.inference_mode():
    memory, state = model.encode(src, lengths)
    for t in range(STEPS):
        lp, state = model.step(memory, state, prefix[:, t])
        ref = full_prefix_log_probs(model, src, lengths, prefix[:, :t + 1])
        worst = max(worst, float((lp - ref).abs().max()))
print(f"cached step vs full prefix: max |diff| {worst:.3g} over {STEPS} steps")
ok = worst < 1e-9
for name, search in [("greedy", lambda m: mt_common.greedy(m, src, lengths, 9)),
                     ("beam 3", lambda m: mt_common.beam(m, src, lengths, 3, 9))]:
    same = torch.equal(search(model), search(Recompute(model)))
    print(f"{name}: cached and recomputed searches {'equal' if same else 'DIFFER'}")
    ok = ok and same
sys.exit(0 if ok else 1)
