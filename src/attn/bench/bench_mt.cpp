// Translation benchmarks: training throughput (target tokens/s of forward +
// backward + clipping + Adam on one batch) and decoding speed (sentences/s,
// greedy and beam), for rnnsearch in two shapes, luong and the Transformer in
// one, vs the PyTorch peers (bench/peers/torch_rnnsearch.py, torch_luong.py,
// torch_transformer.py) on the same shapes and lengths. For the Transformer
// also the arithmetic (mt_flops.h) as GFLOP/s and as a fraction of the sgemm
// rate measured in the same run (mt_rates.h).
//
// Shapes ("model"):
//   lean      rnnsearch: vocab 8000, embedding 256, bi-GRU 256, decoder GRU 512, attention 256,
//             readout 256 (the issue's lean PyTorch rnnsearch, 9.8M parameters)
//   tutorial  rnnsearch: vocab 8000, embedding 256, bi-GRU 512, decoder GRU 512, attention 512, readout 256
//   luong     luong: vocab 8000, embedding 256, bi-LSTM 256, decoder LSTM 512 (one layer each),
//             general score, global window, input feeding, decoder_init mean (lean's hidden sizes;
//             OpenNMT-py's default RNN decoder, 12.9M parameters)
//   transformer configs/multi30k-transformer.yaml: joint vocab 8000 (tied_embeddings all), embed 256,
//             3 + 3 layers, 4 heads, feed-forward 1024, relu, pre-norm, sinusoidal positions,
//             dropout and attention_dropout 0.2 (7.6M parameters)
// Batch (--lengths mixed, the default): `batch` sentences with source and target lengths 8 + (7 b mod 13)
// (Multi30k-like, 8..20 pieces, 14.0 on average + EOS: 256 sentences are
// ~3840 target tokens, the size of the recipe's 4096-token batches; padded to
// 20, so the products run over 21/15 of the tokens the count of mt_flops.h
// credits), or (--lengths uniform) 14 each, as the trainer's length-sorted
// batches are; ids drawn
// from a fixed Rng. An untrained model rarely emits EOS, so decoding runs to
// the length limit: attn each sentence to its own (1.5 * its length + 5 steps),
// the peer every row to the batch's (1.5 * the longest + 5, as fairseq's), the
// same at batch 1; `row_steps` on both sides' lines says how much each ran.
// Searches share the decoder weights prepared once (prepare_ms, reported
// apart), as every search of `attn translate` does.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "attn/autograd/node.h"
#include "attn/bench/bench.h"
#include "attn/bench/mt_rates.h"
#include "attn/cpu/threading.h"
#include "attn/data/line_reader.h"
#include "attn/data/vocab.h"
#include "attn/decode/search.h"
#include "attn/decode/shortlist.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/step_weight_types.h"
#include "attn/tensor/pool.h"
#include "attn/train/clip_grad.h"
#include "attn/train/optim.h"

namespace attn::bench {
namespace {

// A shape: a model config (the file format's JSON) and the PyTorch peer that builds the same network;
// whether that peer also decodes with PyTorch's dynamic int8 (its modules quantised: the
// Transformer peer's cached step multiplies by raw parameters, which quantize_dynamic leaves alone)
struct Preset {
  const char* name;
  const char* config;
  const char* peer;
  bool peer_int8 = true;
};
const Preset kPresets[] = {
    {"lean",
     R"({"type": "rnnsearch", "src_vocab": 8000, "tgt_vocab": 8000, "embed": 256, "encoder_hidden": 256,
         "decoder_hidden": 512, "attention": 256, "readout": 256, "dropout": 0.2, "tied_embeddings": "none"})",
     "torch_rnnsearch.py"},
    {"tutorial",
     R"({"type": "rnnsearch", "src_vocab": 8000, "tgt_vocab": 8000, "embed": 256, "encoder_hidden": 512,
         "decoder_hidden": 512, "attention": 512, "readout": 256, "dropout": 0.2, "tied_embeddings": "none"})",
     "torch_rnnsearch.py"},
    // attention: unused by general scores over a global window
    {"luong",
     R"({"type": "luong", "src_vocab": 8000, "tgt_vocab": 8000, "embed": 256, "encoder_hidden": 256,
         "encoder_layers": 1, "bidirectional": true, "decoder_hidden": 512, "decoder_layers": 1, "cell": "lstm",
         "attention": 256, "score": "general", "window": "global", "decoder_init": "mean", "dropout": 0.2,
         "tied_embeddings": "none"})",
     "torch_luong.py"},
    {"transformer",
     R"({"type": "transformer", "src_vocab": 8000, "tgt_vocab": 8000, "embed": 256, "encoder_layers": 3,
         "decoder_layers": 3, "heads": 4, "feed_forward": 1024, "activation": "relu", "norm": "pre",
         "positions": "sinusoidal", "max_positions": 1024, "dropout": 0.2, "attention_dropout": 0.2,
         "tied_embeddings": "all"})",
     "torch_transformer.py", false},
};

const Preset& preset(const std::string& name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return p;
  throw std::invalid_argument("bench: unknown model shape '" + name + "'");
}

models::ModelConfig shape(const std::string& name) { return models::model_config_from_json(preset(name).config); }

// The PyTorch peer script of a shape
std::string peer_of(const std::string& name) { return preset(name).peer; }

// Sentence b's source and target length: 8..20 in a batch ("mixed"), or 14 each
// ("uniform": the trainer sorts pairs by length before it cuts batches, so its
// Multi30k batches hold one or two lengths)
int64_t length_of(int64_t b, const BenchOptions& opt) { return opt.lengths == "uniform" ? 14 : 8 + (7 * b) % 13; }

std::vector<int64_t> lengths_of(int64_t batch, const BenchOptions& opt) {
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batch; ++b) out.push_back(length_of(b, opt));
  return out;
}

// The longest source of a batch of B (the padded length)
int64_t max_length(int64_t B, const BenchOptions& opt) {
  int64_t S = 0;
  for (int64_t i = 0; i < B; ++i) S = std::max(S, length_of(i, opt));
  return S;
}

// The bench's sentences: B of the suite's lengths, random pieces, or (`real`
// given) the pieces of real sentences in order (sentence i % n, piece j % its length)
data::Seq2SeqBatch make_batch(int64_t B, int64_t vocab, const BenchOptions& opt,
                              const std::vector<std::vector<int>>* real = nullptr) {
  Rng rng(7);
  data::Seq2SeqBatch b;
  const int64_t S = max_length(B, opt);
  const int64_t T = S + 1;
  b.src = Tensor::zeros({B, S});
  b.tgt_in = Tensor::zeros({B, T});
  b.tgt_out = Tensor::zeros({B, T});
  for (int64_t i = 0; i < B; ++i) {
    const int64_t L = length_of(i, opt);
    b.src_lengths.push_back(L);
    std::vector<int> tgt;
    for (int64_t j = 0; j < L; ++j) {
      b.src.data()[i * S + j] = float(4 + rng.below(uint64_t(vocab - 4)));
      if (real) {
        const std::vector<int>& r = (*real)[size_t(i) % real->size()];
        b.src.data()[i * S + j] = float(r[size_t(j) % r.size()]);
      }
      tgt.push_back(int(4 + rng.below(uint64_t(vocab - 4))));
    }
    b.tgt_in.data()[i * T] = data::SpecialIds{}.bos;
    for (int64_t j = 0; j < L; ++j) {
      b.tgt_in.data()[i * T + j + 1] = float(tgt[size_t(j)]);
      b.tgt_out.data()[i * T + j] = float(tgt[size_t(j)]);
    }
    b.tgt_out.data()[i * T + L] = data::SpecialIds{}.eos;
    b.targets.push_back(tgt);
  }
  return b;
}

// --shortlist: the run's lexicon as a shortlist, and its validation sentences in pieces
struct ShortlistSource {
  std::shared_ptr<const decode::Shortlist> list;  // nullptr: the figure without it
  std::vector<std::vector<int>> sources;          // the pieces the batches take
  std::string name;                               // where they came from
};

std::optional<ShortlistSource> shortlist_source(const BenchOptions& opt, const models::ModelConfig& c) {
  if (opt.shortlist <= 0) return std::nullopt;
  if (opt.shortlist_run.empty()) throw std::invalid_argument("bench decode: --shortlist needs --shortlist-run RUN");
  const std::string run = opt.shortlist_run;
  const data::SubwordVocab src = data::SubwordVocab::load(run + "/vocab.src.model");
  const data::SubwordVocab tgt = data::SubwordVocab::load(run + "/vocab.tgt.model");
  if (src.size() > c.src_vocab || tgt.size() != c.tgt_vocab)
    throw std::invalid_argument("bench decode: " + run + "'s vocabularies (" + std::to_string(src.size()) + ", " +
                                std::to_string(tgt.size()) + " pieces) do not fit the model shape's (" +
                                std::to_string(c.src_vocab) + ", " + std::to_string(c.tgt_vocab) + ")");
  std::ifstream config(run + "/train_config.json");
  if (!config) throw std::runtime_error("bench decode: cannot read " + run + "/train_config.json");
  const nlohmann::json cfg = nlohmann::json::parse(config);
  std::string file = cfg["data"].value("valid_src", "");
  if (file.empty()) file = cfg["data"].value("train_src", "");
  if (file.empty()) throw std::invalid_argument("bench decode: " + run + "/train_config.json names no source file");
  ShortlistSource s;
  s.list = std::make_shared<decode::Shortlist>(decode::read_lexicon(run + "/shortlist.tsv", src, tgt), opt.shortlist,
                                               opt.shortlist_frequent, tgt.specials().eos);
  for (const std::string& line : data::read_lines(file))
    if (std::vector<int> ids = src.encode(line); !ids.empty()) s.sources.push_back(std::move(ids));
  s.name = file;
  return s;
}

}  // namespace

std::vector<std::string> mt_presets() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

namespace {

// One training figure: a fresh model of shape `name` (the pool's peak counted
// from its construction: weights, gradients, Adam's moments and the step's
// activations), the median step over `batch` sentences.
nlohmann::json train_line(const BenchOptions& opt, const std::string& name, int64_t batch) {
  models::ModelConfig c = shape(name);
  pool::reset_peak();
  Rng init(1);
  auto model = models::make_model(c, init, 2);
  model->train(true);
  train::Adam adam(model->named_parameters());
  data::Seq2SeqBatch b = make_batch(batch, c.tgt_vocab, opt);
  int64_t tokens = 0;
  for (const auto& t : b.targets) tokens += int64_t(t.size()) + 1;
  models::LossOptions lo;
  lo.label_smoothing = 0.1f;
  const double ms = median_ms(
      [&] {
        adam.zero_grad();
        Tensor loss = model->loss(b, lo);
        backward(loss);
        train::clip_grad_norm(adam.params(), 1.0);
        adam.step();
      },
      opt.repeats);
  nlohmann::json j = {{"bench", "train"}, {"impl", "attn"}, {"model", name}, {"batch", batch}, {"lengths", opt.lengths},
                      {"threads", opt.threads},
                      {"params", model->num_parameters()}, {"tgt_tokens", tokens}, {"step_ms", ms},
                      {"tgt_tokens_per_s", double(tokens) / (ms / 1000.0)},
                      {"pool_peak_bytes", pool::stats().peak_bytes_in_use}, {"max_rss_bytes", rss_peak_bytes()}};
  if (auto d = transformer_dims(c)) {
    const double flops = transformer_train_flops(*d, lengths_of(batch, opt));
    j.update({{"flops", flops}, {"gflops", flops / (ms * 1e6)}});
  }
  return j;
}

// One decoding figure: `batch` sentences searched with `beam` by `model` (its
// decoder weights prepared once); the pool's peak over the searches beyond what
// was in use before them, per sentence.
nlohmann::json decode_line(const BenchOptions& opt, const std::string& name, const models::Seq2SeqModel& model,
                           int64_t batch, int beam, const std::string& compute, const ShortlistSource* shortlist) {
  const models::ModelConfig& c = model.config();
  data::Seq2SeqBatch b = make_batch(batch, c.src_vocab, opt, shortlist ? &shortlist->sources : nullptr);
  decode::SearchOptions so;
  if (shortlist) so.shortlist = shortlist->list;
  so.beam = beam;
  so.max_len_ratio = 1.5;
  so.max_len_offset = 5;
  so.alignments = false;
  // as `attn translate` and translate_lines do: the decoder weights prepared once, then many searches
  so.compute = nn::step_weight_type(compute);
  const double prepare_ms = median_ms([&] { so.prepared = model.prepare_decoder(batch * beam, so.compute); }, 1, 0);
  const size_t in_use = pool::stats().bytes_in_use;
  pool::reset_peak();
  int64_t tokens = 0;
  std::vector<int64_t> steps;  // per sentence: the steps its rows ran (the longest hypothesis, EOS included)
  const double ms = median_ms(
      [&] {
        auto r = decode::search(model, b.src, b.src_lengths, so);
        tokens = 0;
        steps.clear();
        for (const auto& x : r) {
          tokens += int64_t(x.hypotheses[0].tokens.size());
          int64_t n = 0;
          for (const auto& h : x.hypotheses) n = std::max(n, int64_t(h.tokens.size()) + int64_t(h.finished));
          steps.push_back(n);
        }
      },
      std::max(3, opt.repeats / (batch == 1 ? 1 : 2)), 1);
  int64_t row_steps = 0;
  for (int64_t n : steps) row_steps += n * beam;
  nlohmann::json j = {{"bench", "decode"}, {"impl", "attn"}, {"model", name}, {"batch", batch}, {"beam", beam},
                      {"lengths", opt.lengths}, {"compute", compute},
                      {"threads", opt.threads}, {"ms", ms}, {"sents_per_s", double(batch) / (ms / 1000.0)},
                      {"prepare_ms", prepare_ms}, {"tokens_out", tokens}, {"row_steps", row_steps},
                      {"peak_bytes_per_sent", double(pool::stats().peak_bytes_in_use - in_use) / double(batch)}};
  if (shortlist) j["sources"] = shortlist->name;
  if (so.shortlist)
    j.update({{"shortlist", so.shortlist->per_source()}, {"shortlist_frequent", opt.shortlist_frequent},
              {"shortlist_tokens", so.shortlist->candidates(b.src, b.src_lengths).size()}});
  if (auto d = transformer_dims(c)) {
    const double flops = transformer_search_flops(*d, lengths_of(batch, opt), steps, beam);
    j.update({{"flops", flops}, {"gflops", flops / (ms * 1e6)}});
  }
  return j;
}

// {"bench": "decode_compute", model, batch, beam, compute, "speedup_over_fp32"
// (when fp32 ran too), "speedup_over_peer" (PyTorch fp32), and for int8
// "speedup_over_peer_int8" (PyTorch's dynamic int8)} for every compute type but fp32
void emit_compute_speedups(const std::vector<nlohmann::json>& lines, const std::vector<nlohmann::json>& peer) {
  const nlohmann::json* fp32 = nullptr;
  for (const nlohmann::json& j : lines)
    if (j.value("compute", "") == "fp32" && !j.contains("shortlist")) fp32 = &j;
  for (const nlohmann::json& j : lines) {
    if (&j == fp32) continue;
    nlohmann::json s = {{"bench", "decode_compute"}, {"model", j["model"]},     {"batch", j["batch"]},
                        {"beam", j["beam"]},         {"compute", j["compute"]}};
    if (j.contains("shortlist")) s["shortlist"] = j["shortlist"];
    if (fp32) s["speedup_over_fp32"] = double(j["sents_per_s"]) / double((*fp32)["sents_per_s"]);
    for (const nlohmann::json& p : peer) {
      if (p.value("bench", "") != "decode" || !p.contains("sents_per_s")) continue;
      const std::string pc = p.value("compute", "fp32");
      if (pc == "fp32") s["speedup_over_peer"] = double(j["sents_per_s"]) / double(p["sents_per_s"]);
      if (pc == "int8" && j["compute"] == "int8")
        s["speedup_over_peer_int8"] = double(j["sents_per_s"]) / double(p["sents_per_s"]);
    }
    emit(s);
  }
}

// The sgemm rate at n = 2048, measured right after the figure it is held to
// (before the peer runs). Measured once per suite, after the first figure, it
// was up to minutes older than the later figures: this shared machine's rate
// drifts by 20% from minute to minute, and a figure's fraction drifted with it.
double square_sgemm(const BenchOptions& opt) { return sgemm_line(2048, 2048, 2048, "square", opt); }

}  // namespace

void bench_mt_train(const BenchOptions& opt, const std::vector<std::string>& shapes, const std::vector<int64_t>& batches) {
  set_num_threads(opt.threads);
  for (const std::string& name : shapes)
    for (int64_t batch : batches) {
      const nlohmann::json j = train_line(opt, name, batch);
      emit(j);
      const double square = j.contains("flops") ? square_sgemm(opt) : 0.0;
      std::vector<nlohmann::json> peer;
      if (opt.run_peers)
        peer = run_peer(opt, peer_of(name), "--mode train --model " + name + " --batch " + std::to_string(batch) +
                                                     " --lengths " + opt.lengths);
      if (!j.contains("flops")) continue;
      const models::ModelConfig c = shape(name);
      // the step's largest product: the output layer over the batch's target tokens
      const double at_shape = sgemm_line(j["tgt_tokens"].get<int64_t>(), c.tgt_vocab, c.embed, "train output layer", opt);
      int64_t Ns = 0;  // the tokens the layers compute (the real positions of each side)
      for (int64_t L : lengths_of(batch, opt)) Ns += L;
      const double products = sgemm_products_line(transformer_train_products(*transformer_dims(c), Ns, Ns + batch),
                                                  "train step", opt);
      emit_rates(j, peer, "tgt_tokens_per_s", {square, at_shape, products});
    }
}

void bench_mt_decode(const BenchOptions& opt, const std::vector<std::string>& shapes, const std::vector<int64_t>& batches,
                     const std::vector<int>& beams) {
  set_num_threads(opt.threads);
  for (const std::string& name : shapes) {
    models::ModelConfig c = shape(name);
    Rng init(1);
    auto model = models::make_model(c, init, 2);
    model->train(false);
    const std::optional<ShortlistSource> real = shortlist_source(opt, c);
    for (int64_t batch : batches)
      for (int beam : beams) {
        std::vector<nlohmann::json> lines;  // one per compute type, then (--shortlist) one more each with it
        for (bool restrict : {false, true}) {
          if (restrict && !real) continue;
          ShortlistSource source = real ? *real : ShortlistSource{};
          if (!restrict) source.list = nullptr;
          for (const std::string& compute : opt.computes) {
            lines.push_back(decode_line(opt, name, *model, batch, beam, compute, real ? &source : nullptr));
            emit(lines.back());
          }
        }
        const double square = lines[0].contains("flops") ? square_sgemm(opt) : 0.0;
        std::vector<nlohmann::json> peer;
        const std::string peer_args = "--mode decode --model " + name + " --batch " + std::to_string(batch) +
                                      " --beam " + std::to_string(beam) + " --lengths " + opt.lengths;
        if (opt.run_peers) peer = run_peer(opt, peer_of(name), peer_args);
        if (opt.run_peers && preset(name).peer_int8 && std::count(opt.computes.begin(), opt.computes.end(), "int8"))
          for (nlohmann::json& j : run_peer(opt, peer_of(name), peer_args + " --quantize int8")) peer.push_back(j);
        emit_compute_speedups(lines, peer);
        if (!lines[0].contains("flops")) continue;
        // a step's largest product: the output layer over the batch's rows
        const double at_shape = sgemm_line(batch * beam, c.tgt_vocab, c.embed, "decode output layer", opt);
        // a step of the full batch (rows leave it as their sentences finish)
        const double products =
            sgemm_products_line(transformer_step_products(*transformer_dims(c), batch * beam), "decode step", opt);
        for (const nlohmann::json& j : lines)
          emit_rates(j, peer, "sents_per_s", {square, at_shape, products});
      }
  }
}

}  // namespace attn::bench
