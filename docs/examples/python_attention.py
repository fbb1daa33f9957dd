"""attn from Python (docs/python.md): seed 002's worked example computed with
attn's functions and checked against NumPy, then a translation's attention
drawn with matplotlib.

    PYTHONPATH=build/python /usr/bin/python3 docs/examples/python_attention.py [RUN_DIR [OUT.png]]

Seed 002 ("The Attention Mechanism from Scratch"): four words with 3-d
embeddings, W_Q, W_K, W_V drawn by numpy.random.randint(3, size=(3, 3)) after
numpy.random.seed(42), attention = softmax(Q K^T / sqrt(3)) V. With a run
directory (`attn train`), its first sentence's attention is drawn to OUT.png
(default attention.png). Run by python/tests/test_example.py."""
import sys

import numpy as np

import attn

# ---- seed 002, as the tutorial writes it (NumPy) ----
words = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
np.random.seed(42)
W_Q = np.random.randint(3, size=(3, 3))
W_K = np.random.randint(3, size=(3, 3))
W_V = np.random.randint(3, size=(3, 3))
Q, K, V = words @ W_Q, words @ W_K, words @ W_V
scores = Q @ K.T / np.sqrt(K.shape[1])
e = np.exp(scores - scores.max(axis=1, keepdims=True))
numpy_weights = e / e.sum(axis=1, keepdims=True)
numpy_attention = numpy_weights @ V

# ---- the same with attn: arrays are float32 [B, H, L, D], here B = H = 1 ----
def bh(x):
    return np.ascontiguousarray(x, dtype=np.float32)[None, None]


q, k, v = bh(Q), bh(K), bh(V)
weights = attn.masked_softmax(attn.scaled_dot_scores(q, k))  # [1, 1, 4, 4]
step_by_step = weights @ v                                   # [1, 1, 4, 3]
fused = attn.scaled_dot_product_attention(q, k, v)           # the fused kernel: no [4, 4] matrix stored
# Multi-head attention with one head does the projections too: PyTorch's layout
# (y = x W^T), so in_proj_weight stacks the transposed W_Q, W_K, W_V; no output projection.
x = np.ascontiguousarray(words, dtype=np.float32)[None]  # [B, L, E] = [1, 4, 3]
mha = attn.multi_head_attention(x, x, x, 1, in_proj_weight=np.ascontiguousarray(np.concatenate([W_Q.T, W_K.T, W_V.T]), np.float32),
                                out_proj_weight=np.eye(3, dtype=np.float32))

np.testing.assert_allclose(weights[0, 0], numpy_weights, rtol=1e-5)
for name, ours in (("step by step", step_by_step[0, 0]), ("fused", fused[0, 0]), ("multi-head", mha[0])):
    np.testing.assert_allclose(ours, numpy_attention, rtol=1e-5, err_msg=name)
print("seed 002: attn equals NumPy; attention output:")
print(np.array2string(fused[0, 0], precision=6, floatmode="fixed"))

# ---- a translation's attention, drawn with matplotlib ----
if len(sys.argv) > 1:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    translator = attn.Translator(sys.argv[1])
    sentence = "red cat blue dog ." if len(sys.argv) <= 3 else sys.argv[3]
    result = translator.translate([sentence], beam=5, alignments=True)[0]
    a = result.attention[0]  # [target pieces (+ EOS when finished), source pieces]
    fig, ax = plt.subplots(figsize=(1 + 0.5 * a.shape[1], 1 + 0.5 * a.shape[0]))
    ax.imshow(a, cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(a.shape[1]), result.src_pieces, rotation=60, ha="right")
    ax.set_yticks(range(a.shape[0]), result.tgt_pieces[0] + ["</s>"] * result.finished[0])
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    ax.set_title(result.hypotheses[0], fontsize=9)
    fig.tight_layout()
    out = sys.argv[2] if len(sys.argv) > 2 else "attention.png"
    fig.savefig(out, dpi=100)
    print(f"{sentence!r} -> {result.hypotheses[0]!r}; attention [{a.shape[0]}, {a.shape[1]}] drawn to {out}")
