// Inputs that the fuzz targets (fuzz/, fuzz/README.md) found to crash, abort
// or be read wrongly, each kept as a test once fixed (RELIABILITY.md lists
// them with the target that found them).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "attn/config/json_number.h"
#include "attn/models/config.h"
#include "attn/serve/request.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/checkpoint.h"
#include "attn/train/mt_config.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::invalid_argument_of;

// Found by fuzz_serve_request: a body holding a number beyond a double
// (nlohmann throws out_of_range, not parse_error) escaped the request parser
// as an exception that was not a RequestError, and the server answered 500
// "internal error" instead of 400.
TEST(FuzzRegressions, RequestNumberBeyondDoubleIsA400NotA500) {
  const serve::RequestLimits limits;
  for (const std::string body : {"1e3018446744073709551615", "{\"text\": \"a\", \"beam\": 1e400}"}) {
    for (bool explain : {false, true}) {
      try {
        if (explain)
          serve::parse_explain_request(body, limits);
        else
          serve::parse_translate_request(body, limits);
        ADD_FAILURE() << body << " was accepted";
      } catch (const serve::RequestError& e) {
        EXPECT_EQ(e.field(), "") << body;
        EXPECT_NE(std::string(e.what()).find("malformed JSON"), std::string::npos) << e.what();
      }
    }
  }
}

// Found while writing fuzz_model_config (the UBSan build aborts on it): a
// whole number given as a float beyond int64 (1e300, and in YAML inf / nan)
// was converted to int64, which is undefined behaviour; an unsigned above
// INT64_MAX wrapped to a negative number. Now each is refused naming the key.
TEST(FuzzRegressions, WholeNumberBeyondInt64IsRefusedNamingTheKey) {
  for (const std::string value : {"1e300", "-1e300", "9223372036854775808.0", "18446744073709551615"}) {
    const std::string err =
        invalid_argument_of([&] { models::model_config_from_json("{\"embed\": " + value + "}", "model"); });
    EXPECT_NE(err.find("model.embed: expected a whole number within 64 bits, got"), std::string::npos) << value << ": " << err;
  }
  // the largest int64 and a whole float inside the range are still read exactly
  EXPECT_EQ(models::model_config_from_json("{\"embed\": 9223372036854775807}").embed, INT64_MAX);
  EXPECT_EQ(models::model_config_from_json("{\"embed\": -9.2233720368547758e18}").embed, INT64_MIN);
  EXPECT_EQ(models::model_config_from_json("{\"embed\": 64.0}").embed, 64);
  const std::string base = "data:\n  train_tsv: t.tsv\n  valid_holdout: 5\ntrain:\n  out_dir: run\n  max_steps: ";
  for (const std::string value : {"inf", "-inf", "nan", "1e300"}) {
    const std::string err = invalid_argument_of([&] { train::parse_train_config(base + value + "\n"); });
    EXPECT_NE(err.find("train.max_steps: expected a whole number within 64 bits"), std::string::npos) << value << ": " << err;
  }
}

// Found by fuzz_model_config's property "every number given is kept": an id
// of 4294967296 read into an int wrapped to 0, a valid pad id, silently; the
// same for the int fields of the training config (threads, valid_beam, TSV
// columns). Each int field now has a range inside int's, checked before narrowing.
TEST(FuzzRegressions, IntFieldOutside32BitsIsRefusedNotWrapped) {
  const std::string err = invalid_argument_of([] {
    models::model_config_from_json(R"({"src_vocab": 100, "tgt_vocab": 100, "pad_id": 4294967296})", "config.json");
  });
  EXPECT_NE(err.find("config.json.pad_id: 4294967296 outside [0, "), std::string::npos) << err;
  const std::string base = "data:\n  train_tsv: t.tsv\n  valid_holdout: 5\ntrain:\n  out_dir: run\n";
  for (const std::string setting : {"train.threads=4294967297", "train.valid_beam=-4294967295",
                                    "data.tsv_src_column=4294967296", "data.tsv_tgt_column=4294967297"}) {
    const std::string e = invalid_argument_of([&] { train::parse_train_config(base, {setting}); });
    EXPECT_NE(e.find(setting.substr(0, setting.find('=')) + ": " + setting.substr(setting.find('=') + 1) + " outside ["),
              std::string::npos)
        << setting << ": " << e;
  }
  EXPECT_EQ(train::parse_train_config(base, {"train.threads=4096"}).train.threads, 4096);
}

// `depth` nested JSON lists around `inner`: [[[...inner...]]]
std::string nested_lists(size_t depth, const std::string& inner = "") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

// Found by hand-made deep inputs for fuzz_serve_request and fuzz_safetensors
// (the fuzzer's 4 KiB inputs nest too shallowly): an error message quoted the
// offending value with json::dump(), which recurses once per nesting level, so
// a 600 KB body of nested lists (or a model file's dtype) overflowed the stack.
TEST(FuzzRegressions, DeeplyNestedValueInAnErrorDoesNotOverflowTheStack) {
  const std::string deep = nested_lists(300000);
  try {
    serve::parse_translate_request("{\"text\": " + deep + "}", {});
    ADD_FAILURE() << "accepted";
  } catch (const serve::RequestError& e) {
    EXPECT_EQ(e.field(), "text");
    EXPECT_EQ(std::string(e.what()), "request.text: expected a string, got a list of 1 items");
  }
  const std::string err = invalid_argument_of([&] { models::model_config_from_json("{\"type\": " + deep + "}"); });
  // the names are the table of kinds' (models/kinds.h): the built-in ones first, then any a test registered
  EXPECT_EQ(err.rfind("model.type: expected one of rnnsearch, luong, show_attend_tell", 0), 0u) << err;
  EXPECT_NE(err.find(", got a list of 1 items"), std::string::npos) << err;

  testing::TempDir tmp("fuzz_deep_dtype");
  const std::string header = "{\"w\": {\"dtype\": " + deep + ", \"shape\": [1], \"data_offsets\": [0, 4]}}";
  uint64_t n = header.size();
  testing::write_bytes(tmp.path + "/m.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + header + "abcd");
  try {
    load_safetensors(tmp.path + "/m.safetensors");
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w': dtype not a string, only F32, BF16 and I8 are supported"), std::string::npos)
        << e.what();
  }
}

// A long string in a message is cut at a UTF-8 boundary, so the message (sent
// back as JSON by the server) stays valid UTF-8.
TEST(FuzzRegressions, LongValueInAnErrorIsCutAtACodePoint) {
  const std::string text = "\"" + std::string(75, 'a') + "\u00e9\u00e9\u00e9\"";  // the cut falls inside an é
  const std::string err = invalid_argument_of([&] { models::model_config_from_json("{\"embed\": " + text + "}"); });
  EXPECT_EQ(err, "model.embed: expected a whole number within 64 bits, got \"" + std::string(75, 'a') + "...");
}

// Found by fuzz_safetensors in CI (the UBSan build aborts on it): a model
// file's data_offsets or shape, or a trainer state's step, written as a float
// beyond 64 bits (2e+64) was converted with nlohmann's get<uint64_t>(), a plain
// cast: undefined behaviour. Every number of a file is now read through
// config::whole_number / finite_float, and the error names the field.
TEST(FuzzRegressions, FileNumberBeyond64BitsIsRefusedNotCast) {
  testing::TempDir tmp("fuzz_number_beyond");
  auto model_file_error = [&](const std::string& entry) -> std::string {
    const std::string header = "{\"w\": " + entry + "}";
    uint64_t n = header.size();
    testing::write_bytes(tmp.path + "/m.safetensors", std::string(reinterpret_cast<const char*>(&n), 8) + header + "abcd");
    try {
      load_safetensors(tmp.path + "/m.safetensors");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(model_file_error("{\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 2e+64]}")
                .find("tensor 'w': data_offsets are not whole numbers of 64 bits: 0, 2e+64"),
            std::string::npos);
  EXPECT_NE(model_file_error("{\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4.0, 0]}")
                .find("data_offsets are not whole numbers"),
            std::string::npos);
  for (const std::string dim : {"2e+64", "-1e300", "1.5", "\"1\""})
    EXPECT_NE(model_file_error("{\"dtype\": \"F32\", \"shape\": [" + dim + "], \"data_offsets\": [0, 4]}")
                  .find("tensor 'w': shape holds "),
              std::string::npos)
        << dim;
  // a float that is a whole number is still read (as json::get did before)
  EXPECT_EQ(model_file_error("{\"dtype\": \"F32\", \"shape\": [1.0], \"data_offsets\": [0, 4.0]}"), "(accepted)");

  testing::TinyNet net(5, 4, 3, 1);
  train::CheckpointSave save;
  save.model = &net;
  train::save_checkpoint(tmp.path + "/ckpt", save);
  const std::string state_file = tmp.path + "/ckpt/trainer_state.json";
  const nlohmann::json state = nlohmann::json::parse(testing::read_bytes(state_file));
  for (const char* key : {"step", "epoch", "data_position"}) {
    for (const nlohmann::json bad : {nlohmann::json(2e64), nlohmann::json(-1), nlohmann::json(0.5)}) {
      nlohmann::json j = state;
      j[key] = bad;
      testing::write_bytes(state_file, j.dump());
      try {
        train::load_checkpoint(tmp.path + "/ckpt", {&net, nullptr});
        ADD_FAILURE() << key << " = " << bad.dump() << " was accepted";
      } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("trainer_state.json: field '" + std::string(key) + "' is "),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(FuzzRegressions, WholeNumberAndFiniteFloatKeepEveryValueThatFits) {
  using config::finite_float;
  using config::whole_number;
  using J = nlohmann::json;
  EXPECT_EQ(whole_number<int64_t>(J(INT64_MIN)), INT64_MIN);
  EXPECT_EQ(whole_number<int64_t>(J(INT64_MAX)), INT64_MAX);
  EXPECT_EQ(whole_number<uint64_t>(J(UINT64_MAX)), UINT64_MAX);
  EXPECT_EQ(whole_number<int64_t>(J(UINT64_MAX)), std::nullopt);
  EXPECT_EQ(whole_number<int64_t>(J(-9223372036854775808.0)), INT64_MIN);
  EXPECT_EQ(whole_number<int64_t>(J(9223372036854775808.0)), std::nullopt);
  EXPECT_EQ(whole_number<uint64_t>(J(18446744073709549568.0)), uint64_t(18446744073709549568ull));
  EXPECT_EQ(whole_number<uint64_t>(J(18446744073709551616.0)), std::nullopt);
  EXPECT_EQ(whole_number<uint64_t>(J(-1)), std::nullopt);
  EXPECT_EQ(whole_number<int>(J(2147483647)), 2147483647);
  EXPECT_EQ(whole_number<int>(J(2147483648)), std::nullopt);
  EXPECT_EQ(whole_number<int>(J(-2147483648.0)), INT32_MIN);
  EXPECT_EQ(whole_number<int>(J(-2147483649.0)), std::nullopt);
  for (const J bad : {J(0.5), J(std::numeric_limits<double>::infinity()), J(std::nan("")), J("7"), J(true), J()})
    EXPECT_EQ(whole_number<int64_t>(bad), std::nullopt) << bad.dump();
  EXPECT_EQ(finite_float(J(3.5)), 3.5f);
  EXPECT_EQ(finite_float(J(-3.4028234663852886e38)), -std::numeric_limits<float>::max());
  for (const J bad : {J(1e300), J(-1e39), J(std::numeric_limits<double>::infinity()), J("1")})
    EXPECT_EQ(finite_float(bad), std::nullopt) << bad.dump();
}

}  // namespace
}  // namespace attn
