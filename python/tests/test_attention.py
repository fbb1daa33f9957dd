"""attn's attention functions on NumPy arrays against PyTorch (float64) on
the same inputs: the results and, through grad_output, every gradient.
The functions are attn's C++ ones (python/attention_functions.cpp), so these
are the C++ results; the C++ suite holds them to its own references too."""
import math

import numpy as np
import pytest
import torch

import attn

B, H, LQ, LK, D, DK, DV, A = 2, 3, 5, 7, 8, 6, 4, 5


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def t64(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def check(out, grads, ref_out, ref_inputs, names, g):
    """out, grads (attn) against the PyTorch result and its inputs' gradients for upstream g."""
    assert out.shape == tuple(ref_out.shape)
    np.testing.assert_allclose(out, ref_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    ref_out.backward(torch.tensor(g, dtype=torch.float64))
    assert sorted(grads) == sorted(names)
    for name, x in zip(names, ref_inputs):
        assert grads[name].shape == tuple(x.shape), name
        np.testing.assert_allclose(grads[name], x.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)


# ---- the five scores ----
# name: (inputs' shapes, attn call, torch reference)
SCORES = {
    "dot": (dict(q=(B, H, LQ, D), k=(B, H, LK, D)),
            lambda x, **kw: attn.dot_scores(x["q"], x["k"], **kw),
            lambda t: t["q"] @ t["k"].transpose(-1, -2)),
    "scaled_dot": (dict(q=(B, H, LQ, D), k=(B, H, LK, D)),
                   lambda x, **kw: attn.scaled_dot_scores(x["q"], x["k"], **kw),
                   lambda t: t["q"] @ t["k"].transpose(-1, -2) / math.sqrt(D)),
    "general": (dict(q=(B, H, LQ, D), k=(B, H, LK, DK), W=(D, DK)),
                lambda x, **kw: attn.general_scores(x["q"], x["k"], x["W"], **kw),
                lambda t: t["q"] @ t["W"] @ t["k"].transpose(-1, -2)),
    "additive": (dict(q=(B, H, LQ, D), k=(B, H, LK, DK), W1=(A, D), W2=(A, DK), v=(A,), bias=(A,)),
                 lambda x, **kw: attn.additive_scores(x["q"], x["k"], x["W1"], x["W2"], x["v"], bias=x["bias"], **kw),
                 lambda t: torch.tanh((t["q"] @ t["W1"].T + t["bias"]).unsqueeze(3)
                                      + (t["k"] @ t["W2"].T).unsqueeze(2)) @ t["v"]),
    "concat": (dict(q=(B, H, LQ, D), k=(B, H, LK, DK), Wa=(A, D + DK), v=(A,)),
               lambda x, **kw: attn.concat_scores(x["q"], x["k"], x["Wa"], x["v"], **kw),
               lambda t: torch.tanh((t["q"] @ t["Wa"][:, :D].T).unsqueeze(3)
                                    + (t["k"] @ t["Wa"][:, D:].T).unsqueeze(2)) @ t["v"]),
}


@pytest.mark.parametrize("kind", SCORES)
def test_scores_forward_and_gradients_equal_torch(kind):
    shapes, call, ref = SCORES[kind]
    rng = np.random.default_rng(1)
    x = {n: rand(rng, *s) for n, s in shapes.items()}
    t = {n: t64(a) for n, a in x.items()}
    g = rand(rng, B, H, LQ, LK)
    plain = call(x)
    out, grads = call(x, grad_output=g)
    np.testing.assert_array_equal(plain, out)  # the same forward with or without the tape
    check(out, grads, ref(t), list(t.values()), list(t), g)


def test_scaled_dot_given_scale():
    rng = np.random.default_rng(2)
    q, k = rand(rng, 1, 1, 3, 4), rand(rng, 1, 1, 2, 4)
    np.testing.assert_allclose(attn.scaled_dot_scores(q, k, scale=0.25), q @ k.transpose(0, 1, 3, 2) * 0.25, rtol=1e-6)


def masked_reference(s, lengths, causal):
    """softmax over the visible keys; a row with none is zeros (attn's rule; PyTorch would give NaN)."""
    visible = torch.ones(s.shape, dtype=torch.bool)
    if lengths is not None:
        visible &= (torch.arange(s.shape[-1]) < torch.tensor(lengths).reshape(-1, 1, 1, 1))
    if causal:
        visible &= torch.ones(s.shape[-2:], dtype=torch.bool).tril()
    e = torch.exp(s - s.max()) * visible
    return e / e.sum(-1, keepdim=True).clamp_min(1e-300)


@pytest.mark.parametrize("lengths,causal", [(None, False), ([7, 3], False), (None, True), ([0, 4], True)])
def test_masked_softmax_equals_torch(lengths, causal):
    rng = np.random.default_rng(3)
    s = rand(rng, B, H, LQ, LK)
    g = rand(rng, B, H, LQ, LK)
    kl = None if lengths is None else np.array(lengths, np.float32)
    out, grads = attn.masked_softmax(s, key_lengths=kl, causal=causal, grad_output=g)
    t = t64(s)
    check(out, grads, masked_reference(t, lengths, causal), [t], ["scores"], g)
    if lengths == [0, 4]:
        assert not out[0].any()  # no visible key: zeros, never NaN


def test_masked_softmax_keep_mask():
    rng = np.random.default_rng(4)
    s = rand(rng, 1, 1, 2, 3)
    keep = np.array([[1, 0, 1], [0, 1, 1]], np.float32)
    out = attn.masked_softmax(s, keep=keep)
    e = np.exp(s[0, 0]) * keep
    np.testing.assert_allclose(out[0, 0], e / e.sum(-1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("lengths,causal", [(None, False), ([7, 2], False), (None, True), ([5, 6], True)])
def test_fused_sdpa_forward_and_backward_equal_torch(lengths, causal):
    rng = np.random.default_rng(5)
    lq = 20  # more than one row of the kernel's query tile is not needed for equality; any Lq works
    q, k, v = rand(rng, B, H, lq, D), rand(rng, B, H, LK, D), rand(rng, B, H, LK, DV)
    g = rand(rng, B, H, lq, DV)
    kl = None if lengths is None else np.array(lengths, np.float32)
    out, grads = attn.scaled_dot_product_attention(q, k, v, key_lengths=kl, causal=causal, grad_output=g)
    tq, tk, tv = t64(q), t64(k), t64(v)
    w = masked_reference(tq @ tk.transpose(-1, -2) / math.sqrt(D), lengths, causal)
    check(out, grads, w @ tv, [tq, tk, tv], ["q", "k", "v"], g)
    np.testing.assert_array_equal(attn.scaled_dot_product_attention(q, k, v, key_lengths=kl, causal=causal), out)


@pytest.mark.parametrize("self_attention", [True, False])
def test_multi_head_attention_equals_torch(self_attention):
    E, heads, lq, lk = 12, 3, 5, 6
    rng = np.random.default_rng(6)
    x = rand(rng, B, lq, E)
    mem = x if self_attention else rand(rng, B, lk, E)
    w = dict(in_proj_weight=rand(rng, 3 * E, E), in_proj_bias=rand(rng, 3 * E),
             out_proj_weight=rand(rng, E, E), out_proj_bias=rand(rng, E))
    kl = np.array([mem.shape[1], 2], np.float32)
    g = rand(rng, B, lq, E)
    out, grads = attn.multi_head_attention(x, mem, mem, heads, key_lengths=kl, grad_output=g, **w)
    mha = torch.nn.MultiheadAttention(E, heads, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.tensor(w["in_proj_weight"]))
        mha.in_proj_bias.copy_(torch.tensor(w["in_proj_bias"]))
        mha.out_proj.weight.copy_(torch.tensor(w["out_proj_weight"]))
        mha.out_proj.bias.copy_(torch.tensor(w["out_proj_bias"]))
    tx = t64(x)
    tm = tx if self_attention else t64(mem)
    pad = torch.arange(mem.shape[1]) >= torch.tensor(kl).reshape(-1, 1)
    ref, _ = mha(tx, tm, tm, key_padding_mask=pad, need_weights=False)
    np.testing.assert_allclose(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    ref.backward(torch.tensor(g, dtype=torch.float64))
    np.testing.assert_allclose(grads["query"], tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    if not self_attention:  # one array as key and value: its total gradient under both names
        np.testing.assert_allclose(grads["key"], tm.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(grads["key"], grads["value"])
    for name, p in (("in_proj_weight", mha.in_proj_weight), ("in_proj_bias", mha.in_proj_bias),
                    ("out_proj_weight", mha.out_proj.weight), ("out_proj_bias", mha.out_proj.bias)):
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)


def test_results_share_no_memory_with_inputs_and_inputs_are_not_copied():
    rng = np.random.default_rng(7)
    q, k = rand(rng, 1, 1, 3, 4), rand(rng, 1, 1, 3, 4)
    q.setflags(write=False)  # a read-only input is read in place
    s = attn.dot_scores(q, k)
    assert s.flags.c_contiguous and s.dtype == np.float32
    assert not np.shares_memory(s, q) and not np.shares_memory(s, k)
    np.testing.assert_allclose(s, q @ k.transpose(0, 1, 3, 2), rtol=1e-6)


# ---- the boundary: wrong types, layouts and shapes raise, with the C++ message ----
def good(rng=np.random.default_rng(8)):
    return rand(rng, 2, 1, 3, 4), rand(rng, 2, 1, 5, 4), rand(rng, 2, 1, 5, 4)


BAD_CALLS = [
    # (call, exception, message fragment)
    (lambda q, k, v: attn.dot_scores(q.astype(np.float64), k), TypeError, "dot_scores: q must be float32, not float64"),
    (lambda q, k, v: attn.dot_scores(q.tolist(), k), TypeError, "dot_scores: q must be a numpy.ndarray"),
    (lambda q, k, v: attn.dot_scores(q, k[:, :, ::2]), ValueError, "dot_scores: k must be C-contiguous"),
    (lambda q, k, v: attn.dot_scores(q, np.asfortranarray(k)), ValueError, "C-contiguous"),
    (lambda q, k, v: attn.dot_scores(q[0], k), ValueError, "4-D"),
    (lambda q, k, v: attn.scaled_dot_scores(q, np.ascontiguousarray(k[:, :, :, :3])), ValueError, "q and k sizes differ"),
    (lambda q, k, v: attn.general_scores(q, k, np.zeros((3, 4), np.float32)), ValueError, "general_scores"),
    (lambda q, k, v: attn.additive_scores(q, k, np.zeros((5, 4), np.float32), np.zeros((5, 3), np.float32),
                                          np.zeros(5, np.float32)), ValueError, "W2"),
    (lambda q, k, v: attn.concat_scores(q, k, np.zeros((5, 7), np.float32), np.zeros(5, np.float32)), ValueError, "Wa"),
    (lambda q, k, v: attn.masked_softmax(q[0]), ValueError, "masked_softmax: scores [1, 3, 4] must be [B, H, Lq, Lk]"),
    (lambda q, k, v: attn.masked_softmax(q, key_lengths=np.array([1, 9], np.float32)), ValueError, "key_lengths"),
    (lambda q, k, v: attn.masked_softmax(q, key_lengths=np.array([1], np.float32)), ValueError, "key_lengths"),
    (lambda q, k, v: attn.scaled_dot_product_attention(q, k, np.ascontiguousarray(v[:, :, :4])), ValueError, "k and v have different lengths"),
    (lambda q, k, v: attn.scaled_dot_product_attention(q, k, v, key_lengths=np.array([1.5, 2], np.float32)),
     ValueError, "key_lengths"),
    (lambda q, k, v: attn.scaled_dot_product_attention(q, k, v, key_lengths=np.array([1, 2], np.int32)),
     TypeError, "key_lengths must be float32"),
    (lambda q, k, v: attn.scaled_dot_product_attention(q, k, v, grad_output=np.zeros((2, 1, 3, 5), np.float32)),
     ValueError, "grad_output and the result"),
    (lambda q, k, v: attn.dot_scores(q, k, grad_output=np.zeros((2, 1, 3, 5), np.float64)), TypeError, "grad_output"),
    (lambda q, k, v: attn.multi_head_attention(q[:, 0], k[:, 0], v[:, 0], 2, in_proj_weight=np.zeros((12, 5), np.float32),
                                               out_proj_weight=np.zeros((4, 4), np.float32)),
     ValueError, "in_proj_weight"),
    (lambda q, k, v: attn.multi_head_attention(q[:, 0], k[:, 0], v[:, 0], 3, in_proj_weight=np.zeros((12, 4), np.float32),
                                               out_proj_weight=np.zeros((4, 4), np.float32)),
     ValueError, "divisible|heads"),
]


@pytest.mark.parametrize("i", range(len(BAD_CALLS)))
def test_bad_arguments_raise_clear_errors(i):
    call, exc, fragment = BAD_CALLS[i]
    with pytest.raises(exc) as e:
        call(*good())
    assert any(f in str(e.value) for f in fragment.split("|")), str(e.value)


def test_empty_and_zero_size_arrays_do_not_crash():
    z = np.zeros((0, 1, 3, 4), np.float32)
    assert attn.dot_scores(z, np.zeros((0, 1, 5, 4), np.float32)).shape == (0, 1, 3, 5)
