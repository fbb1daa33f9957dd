"""Type stubs of attn's compiled module (python/*.cpp). Shapes as the C++
headers state them (attention/attention.h): B batch, H heads, Lq query length,
Lk key length, D query size, Dk key size, Dv value size, A attention size,
E model size. Every array argument is a float32, C-contiguous numpy.ndarray
(TypeError / ValueError otherwise, naming the argument); it is read in place,
never copied. With grad_output= (the upstream gradient, of the result's
shape) a function returns (result, {argument name: gradient}) instead of the
result alone."""
from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]
Grads = Dict[str, Array]

# ---- scores: q [B, H, Lq, D], k [B, H, Lk, Dk] -> scores [B, H, Lq, Lk] ----
@overload
def dot_scores(q: Array, k: Array) -> Array:
    """q . k (Dk = D)."""
@overload
def dot_scores(q: Array, k: Array, *, grad_output: Array) -> Tuple[Array, Grads]: ...
@overload
def scaled_dot_scores(q: Array, k: Array, *, scale: Optional[float] = None) -> Array:
    """q . k * scale, default scale 1 / sqrt(D)."""
@overload
def scaled_dot_scores(q: Array, k: Array, *, scale: Optional[float] = None, grad_output: Array) -> Tuple[Array, Grads]: ...
@overload
def general_scores(q: Array, k: Array, W: Array) -> Array:
    """q^T W k, W [D, Dk]."""
@overload
def general_scores(q: Array, k: Array, W: Array, *, grad_output: Array) -> Tuple[Array, Grads]: ...
@overload
def additive_scores(q: Array, k: Array, W1: Array, W2: Array, v: Array, *, bias: Optional[Array] = None) -> Array:
    """v^T tanh(W1 q + W2 k + bias): W1 [A, D], W2 [A, Dk], v [A], bias [A]."""
@overload
def additive_scores(q: Array, k: Array, W1: Array, W2: Array, v: Array, *, bias: Optional[Array] = None,
                    grad_output: Array) -> Tuple[Array, Grads]: ...
@overload
def concat_scores(q: Array, k: Array, Wa: Array, v: Array) -> Array:
    """v^T tanh(Wa [q; k]): Wa [A, D + Dk], v [A] (Luong's concat)."""
@overload
def concat_scores(q: Array, k: Array, Wa: Array, v: Array, *, grad_output: Array) -> Tuple[Array, Grads]: ...

# ---- masked softmax: scores [B, H, Lq, Lk] -> weights [B, H, Lq, Lk] ----
@overload
def masked_softmax(scores: Array, *, key_lengths: Optional[Array] = None, causal: bool = False,
                   keep: Optional[Array] = None) -> Array:
    """Softmax over the keys each query sees: key_lengths [B] (keys j >= length hidden), causal (j <= i),
    keep 0/1 broadcastable to [B, H, Lq, Lk]. A row with no visible key is zeros."""
@overload
def masked_softmax(scores: Array, *, key_lengths: Optional[Array] = None, causal: bool = False,
                   keep: Optional[Array] = None, grad_output: Array) -> Tuple[Array, Grads]: ...

# ---- fused scaled dot-product attention ----
@overload
def scaled_dot_product_attention(q: Array, k: Array, v: Array, *, scale: Optional[float] = None,
                                 key_lengths: Optional[Array] = None, causal: bool = False,
                                 keep: Optional[Array] = None) -> Array:
    """q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv] -> context [B, H, Lq, Dv] by the fused
    (FlashAttention-style) kernel; scale default 1 / sqrt(D); masks as masked_softmax.
    With grad_output [B, H, Lq, Dv]: its backward, gradients "q", "k", "v"."""
@overload
def scaled_dot_product_attention(q: Array, k: Array, v: Array, *, scale: Optional[float] = None,
                                 key_lengths: Optional[Array] = None, causal: bool = False,
                                 keep: Optional[Array] = None, grad_output: Array) -> Tuple[Array, Grads]: ...

# ---- multi-head attention with given weights (PyTorch's nn.MultiheadAttention layout) ----
@overload
def multi_head_attention(query: Array, key: Array, value: Array, num_heads: int, *, in_proj_weight: Array,
                         in_proj_bias: Optional[Array] = None, out_proj_weight: Array,
                         out_proj_bias: Optional[Array] = None, key_lengths: Optional[Array] = None,
                         causal: bool = False, keep: Optional[Array] = None) -> Array:
    """query [B, Lq, E], key and value [B, Lk, E] -> [B, Lq, E]; in_proj_weight [3E, E] (rows W_Q, W_K, W_V),
    in_proj_bias [3E], out_proj_weight [E, E], out_proj_bias [E] (both biases or neither); E divisible by
    num_heads. The same array as query, key and value takes the packed self-attention path; an array given
    as several arguments has its total gradient under each name."""
@overload
def multi_head_attention(query: Array, key: Array, value: Array, num_heads: int, *, in_proj_weight: Array,
                         in_proj_bias: Optional[Array] = None, out_proj_weight: Array,
                         out_proj_bias: Optional[Array] = None, key_lengths: Optional[Array] = None,
                         causal: bool = False, keep: Optional[Array] = None,
                         grad_output: Array) -> Tuple[Array, Grads]: ...

# ---- metrics: `attn score` ----
class BleuScore:
    score: float
    counts: List[float]
    totals: List[float]
    precisions: List[float]
    bp: float
    sys_len: int
    ref_len: int
    @property
    def signature(self) -> str: ...
    def __float__(self) -> float: ...

class ChrfScore:
    score: float
    beta: float
    word_order: int
    @property
    def signature(self) -> str: ...
    def __float__(self) -> float: ...

def bleu(hyps: Sequence[str], refs: Union[Sequence[str], Sequence[Sequence[str]]]) -> BleuScore:
    """Corpus BLEU (sacreBLEU 13a): hyps [N], refs [N] or a list of [N] reference streams."""
def chrf(hyps: Sequence[str], refs: Union[Sequence[str], Sequence[Sequence[str]]], *, word_order: int = 0) -> ChrfScore:
    """Corpus chrF (word_order=2: chrF++)."""

# ---- translation ----
class TranslationResult:
    hypotheses: List[str]          # [n_best], best first
    scores: List[float]            # [n_best]
    log_probs: List[float]         # [n_best]
    tgt_pieces: List[List[str]]    # [n_best][T]
    finished: List[bool]           # [n_best] ended with EOS (else cut at the length limit)
    src_pieces: List[str]          # [S]
    attention: List[Array]         # [n_best] arrays [T (+1 for EOS), S] when alignments=True

class Translator:
    def __init__(self, run_dir: str, *, compute: str = "fp32", threads: int = 0, weights: str = "") -> None: ...
    def translate(self, lines: Sequence[str], *, beam: int = 5, n_best: int = 1, alignments: bool = False,
                  length_penalty: float = 1.0, max_len_ratio: float = 2.0, batch: int = 64,
                  max_src_pieces: int = 250, attention_map: str = "") -> List[TranslationResult]:
        """[N] sentences -> [N] results (the GIL released; threads may share a Translator)."""
    def explain(self, text: str, *, beam: int = 1, top_k: int = 5, words: bool = False, max_len_ratio: float = 2.0,
                attention_map: str = "", self_attention_map: str = "") -> Dict[str, Any]:
        """The object `attn explain --format json` prints."""
    @property
    def attention_maps(self) -> List[str]: ...
    @property
    def model_type(self) -> str: ...

# ---- captioning ----
class CaptionResult:
    caption: str
    words: List[str]               # [T]
    attention: Array               # [T, Gh, Gw]
    log_prob: float
    finished: bool

ImageInput = Union[str, "PathLike[str]", npt.NDArray[Any]]  # a path, or [H, W, 3] uint8 / float32 in [0, 1]

class Captioner:
    def __init__(self, run_dir: str, *, compute: str = "fp32", threads: int = 0, weights: str = "") -> None: ...
    @overload
    def caption(self, image: ImageInput, *, beam: int = 1, max_words: int = 40,
                attention_map: str = "") -> CaptionResult: ...
    @overload
    def caption(self, image: Sequence[ImageInput], *, beam: int = 1, max_words: int = 40,
                attention_map: str = "") -> List[CaptionResult]: ...

# ---- training ----
def train(config_path: str, overrides: Optional[Dict[str, Any]] = None, *, resume: bool = False,
          stop_after_steps: int = 0, progress: Optional[Callable[[str], Any]] = print) -> Dict[str, Any]:
    """`attn train -c CONFIG --set k=v`; Ctrl-C checkpoints, then raises KeyboardInterrupt."""

# ---- the BLAS (cpu/blas.h), as `attn --version` reports it ----
def _blas() -> Dict[str, str]:
    """path, config, core, threading of the OpenBLAS attn opened (opening it now if not yet), and
    wanted_core, the core attn asks for; attn/__init__.py warns when NumPy initialised it first."""
