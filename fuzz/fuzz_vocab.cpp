// Fuzz target: loading a SentencePiece model (data/vocab.*), the file given
// as `vocab.src_model` or found in a run directory. The model's bytes go to
// SubwordVocab::load_from_bytes (what load() does after reading the file); a
// model that loads then encodes and decodes a sentence, as translation would.
#include <cstdlib>

#include "attn/data/vocab.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attn;
  try {
    data::SubwordVocab v = data::SubwordVocab::load_from_bytes(fuzz::as_view(data, size), "fuzz.model");
    const std::vector<int> ids = v.encode("Hello world, ça va? 東京");
    for (int id : ids)
      if (id < 0 || id >= v.size()) std::abort();
    (void)v.decode(ids);
    for (int id = 0; id < v.size() && id < 64; ++id) (void)v.id(v.piece(id));
  } catch (const std::exception&) {
    // refused with a message
  }
  return 0;
}
