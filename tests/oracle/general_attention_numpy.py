"""The worked example of seed 002 ("The Attention Mechanism from Scratch",
section "The General Attention Mechanism with NumPy and SciPy"), run with
NumPy: four words with 3-d embeddings, weight matrices W_Q, W_K, W_V drawn in
that order by random.randint(3, size=(3, 3)) after random.seed(42), then
softmax(Q K^T / sqrt(3)) V for all four words at once. The tutorial takes the
softmax from scipy.special (not installed here); softmax(x, axis=1) is
exp(x - max) / sum exp(x - max) along the rows, written out below.

Writes words, W_Q, W_K, W_V, the weights and the attention output (float64
results, stored as float32) to the safetensors file named by argv[1]."""
import sys

import numpy as np
from numpy import array, random

from st import save

# encoder representations of four different words
word_1 = array([1, 0, 0])
word_2 = array([0, 1, 0])
word_3 = array([1, 1, 0])
word_4 = array([0, 0, 1])
words = array([word_1, word_2, word_3, word_4])

random.seed(42)
W_Q = random.randint(3, size=(3, 3))
W_K = random.randint(3, size=(3, 3))
W_V = random.randint(3, size=(3, 3))

Q = words @ W_Q
K = words @ W_K
V = words @ W_V
scores = Q @ K.transpose() / K.shape[1] ** 0.5
e = np.exp(scores - scores.max(axis=1, keepdims=True))
weights = e / e.sum(axis=1, keepdims=True)
attention = weights @ V

save(sys.argv[1], {"words": words, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "weights": weights, "attention": attention})
