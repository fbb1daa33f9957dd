"""attn from Python: a thin layer over the C++ core (docs/python.md).

Attention functions on NumPy float32 arrays (shapes as attention/attention.h:
q [B, H, Lq, D], k [B, H, Lk, Dk], v [B, H, Lk, Dv], scores and weights
[B, H, Lq, Lk], context [B, H, Lq, Dv]), each with its backward through
``grad_output=``; Translator (translate, explain), Captioner, bleu / chrf,
train. Errors from C++ arrive as ValueError / RuntimeError with C++'s message.
"""
import sys as _sys
import warnings as _warnings

_numpy_first = "numpy" in _sys.modules

from ._attn import (
    BleuScore,
    CaptionResult,
    Captioner,
    ChrfScore,
    TranslationResult,
    Translator,
    additive_scores,
    bleu,
    chrf,
    concat_scores,
    dot_scores,
    general_scores,
    masked_softmax,
    multi_head_attention,
    scaled_dot_product_attention,
    scaled_dot_scores,
    train,
)

from ._attn import _blas

# attn chooses OpenBLAS's kernels before OpenBLAS initialises (src/attn/cpu/blas.h).
# NumPy links the same OpenBLAS (Debian: libblas.so.3 -> libopenblasp): imported
# first, it initialised it with OpenBLAS's own choice. Open it now, so that a NumPy
# imported after attn runs on attn's choice too; warn when it is too late.
_blas_info = _blas()
if _numpy_first and _blas_info["core"] and _blas_info["core"].upper() != _blas_info["wanted_core"]:
    _warnings.warn(
        f"attn: OpenBLAS was initialised before attn (by NumPy?) with core {_blas_info['core']}; attn's "
        f"large products want {_blas_info['wanted_core']}: import attn before numpy, or set "
        f"OPENBLAS_CORETYPE={_blas_info['wanted_core']} before starting Python",
        RuntimeWarning,
        stacklevel=2,
    )

__all__ = [
    "BleuScore",
    "CaptionResult",
    "Captioner",
    "ChrfScore",
    "TranslationResult",
    "Translator",
    "additive_scores",
    "bleu",
    "chrf",
    "concat_scores",
    "dot_scores",
    "general_scores",
    "masked_softmax",
    "multi_head_attention",
    "scaled_dot_product_attention",
    "scaled_dot_scores",
    "train",
]
