#include "attn/data/toy_tasks.h"

#include <string>
#include <vector>

#include "attn/tensor/random.h"

namespace attn::data {

ParallelCorpus reversal_corpus(int64_t n, uint64_t seed) {
  static const char* en[] = {"one", "two",  "three", "four",  "five",  "six",  "seven", "eight",
                             "nine", "ten", "red",   "blue",  "green", "black", "white", "cat",
                             "dog", "bird", "fish",  "house", "car",   "tree", "sun",   "moon"};
  static const char* fr[] = {"un",    "deux",   "trois",   "quatre", "cinq",    "six",   "sept",   "huit",
                             "neuf",  "dix",    "rouge",   "bleu",   "vert",    "noir",  "blanc",  "chat",
                             "chien", "oiseau", "poisson", "maison", "voiture", "arbre", "soleil", "lune"};
  Rng rng(seed);
  ParallelCorpus c;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = 3 + int64_t(rng.below(5));
    std::vector<int> w;
    for (int64_t k = 0; k < len; ++k) w.push_back(int(rng.below(24)));
    std::string s, t;
    for (int x : w) s += std::string(en[x]) + " ";
    for (auto it = w.rbegin(); it != w.rend(); ++it) t += std::string(fr[*it]) + " ";
    c.src.push_back(s + ".");
    c.tgt.push_back(t + ".");
  }
  return c;
}

}  // namespace attn::data
