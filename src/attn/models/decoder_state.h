// The named tensor sets a search runs on: the encoder's memory (per sentence)
// and the decoder's state (per row, updated in place by the steps of a search).
//
// Legend: B = sentences, N = live decoder rows, M = the rows a state's buffers
// hold (max_rows), S = padded source length. The row axis comes first in
// every tensor, so the searches move rows without knowing what they mean.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::models {

// Tensors by name, each with the row axis first (B sentences or N decoder
// rows). References stay valid as tensors are added (a map).
class TensorSet {
public:
  // The tensor `name`, added undefined when missing (so `set["keys"] = t` adds one).
  Tensor& operator[](const std::string& name) { return tensors_[name]; }
  // The tensor `name`; throws std::invalid_argument naming it when missing.
  const Tensor& get(const std::string& name) const;
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::map<std::string, Tensor>& all() const { return tensors_; }

private:
  std::map<std::string, Tensor> tensors_;
};

// The encoder's output for B sentences, each tensor [B, ...]. Every attention
// model kind has the three below; a kind adds its own by name (a key and a
// value per layer for cross-attention, say) without changing the struct.
struct EncoderMemory : TensorSet {
  // values [B, S, Dv] encoder outputs (annotations), zeros past each length
  Tensor& values() { return (*this)["values"]; }
  const Tensor& values() const { return get("values"); }
  // keys [B, S, K] the keys the score function reads, precomputed once per batch
  // (rnnsearch: U h_j + b; luong general: W h_j; luong dot: = values)
  Tensor& keys() { return (*this)["keys"]; }
  const Tensor& keys() const { return get("keys"); }
  // lengths [B] float-encoded source lengths
  Tensor& lengths() { return (*this)["lengths"]; }
  const Tensor& lengths() const { return get("lengths"); }
};

// The decoder's per-row state by name, each tensor [M, ...] of which
// the first rows() rows are live. encode() and step() make states of exactly
// their rows (max_rows == rows, the tensors as the ops returned them, autograd
// kept); a search's state is made once for its most rows (and its cache for
// its most steps, as the model chooses) and updated in place by every step.
class DecoderState {
public:
  DecoderState() = default;
  // A state of `rows` live rows in buffers of max_rows (>= rows) rows; no tensors yet.
  DecoderState(int64_t rows, int64_t max_rows);
  // Adds `name`: zeros [max_rows, per_row...]; returns the whole buffer.
  // time_axis >= 0 marks per_row[time_axis] as a cache's time axis (a
  // Transformer's keys [H, T, hd]: time_axis 1), of which only the positions
  // below filled_steps() are live, so a gather copies only those.
  Tensor& add(const std::string& name, const Shape& per_row, int time_axis = -1);
  // Adds `name`: [T, max_rows, per_slot...] uninitialised (nothing reads a
  // slot before a step writes it, and untouched pages stay unfaulted), a
  // cache that gather() does not move. A step writes row i's position t into slot [t, i]; each row
  // finds its earlier positions through a table of its own (an ordinary
  // per-row tensor with a time axis, which gather() does move: T numbers a
  // row where moving the cache would be T x per_slot floats). Axis 0 is a
  // time axis for set_filled_steps() and grow_time_axes().
  Tensor& add_unmoved(const std::string& name, int64_t T, const Shape& per_slot);
  // The positions [0, n) of every time axis hold values (the step that wrote
  // position n - 1 says so); default: the whole axis. What lies past them is
  // not moved by gather() and must not be read.
  void set_filled_steps(int64_t n) { filled_steps_ = n; }
  // Every time axis shorter than `len` positions becomes `len` long, its
  // filled positions (all of them when filled_steps() < 0) copied: a cache
  // that starts short and doubles as a search runs on touches memory in
  // proportion to the steps taken, not to the longest search allowed.
  void grow_time_axes(int64_t len);
  int64_t filled_steps() const { return filled_steps_; }
  // Adds or replaces `name` by t [rows(), ...] as it is (no copy, autograd kept);
  // only in a state whose buffers hold exactly its rows. The first set() of
  // a default-constructed state sets rows() = max_rows() = t.size(0).
  void set(const std::string& name, const Tensor& t);
  // The live rows of `name`: [rows(), ...], the buffer itself when it holds
  // exactly rows() rows (so step() reads encode()'s tensors with their
  // history); an unmoved tensor whole.
  Tensor live(const std::string& name) const;
  // The whole buffer of `name`: [max_rows, ...] (a step writes its rows in place).
  const Tensor& buffer(const std::string& name) const { return buffers_.get(name); }
  // The buffer's first float (throws std::invalid_argument when `name` is missing).
  float* data(const std::string& name);
  bool has(const std::string& name) const { return buffers_.has(name); }
  const std::map<std::string, Tensor>& buffers() const { return buffers_.all(); }
  int64_t rows() const { return rows_; }
  int64_t max_rows() const { return max_rows_; }

  // Row i <- row from[i] for i < from.size(), every tensor, then rows() =
  // from.size() (<= max_rows, each from[i] in [0, rows())): beam search's
  // reordering, finished sentences leaving. The rows go into a second buffer
  // per tensor (allocated at the first gather), which is then swapped in.
  void gather(const std::vector<int64_t>& from);
  // A state of rows() rows whose tensors view this one's live rows (no copy).
  DecoderState live_view() const;
  // Copies every tensor of `from` (a state of rows() rows with the same names) into the live rows.
  void copy_live_from(const DecoderState& from);

private:
  TensorSet buffers_, spare_;
  std::map<std::string, int> time_axis_;  // the buffers add() gave a time axis: its index in the buffer's shape
  std::set<std::string> unmoved_;         // add_unmoved()'s: no row axis, left in place by gather()
  int64_t rows_ = 0, max_rows_ = 0, filled_steps_ = -1;
};

}  // namespace attn::models
