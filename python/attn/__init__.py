"""attn from Python: a thin layer over the C++ core (docs/python.md).

Attention functions on NumPy float32 arrays (shapes as attention/attention.h:
q [B, H, Lq, D], k [B, H, Lk, Dk], v [B, H, Lk, Dv], scores and weights
[B, H, Lq, Lk], context [B, H, Lq, Dv]), each with its backward through
``grad_output=``; Translator (translate, explain), Captioner, bleu / chrf,
train. Errors from C++ arrive as ValueError / RuntimeError with C++'s message.
"""
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
