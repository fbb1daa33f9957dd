// Numbers read from outside JSON, converted without undefined behaviour.
//
// nlohmann's get<int64_t>() of a float value is a plain static_cast: 2e64 read
// as a size or an offset is undefined behaviour (UBSan, fuzz_safetensors), and
// get<int>() of an integer beyond int silently wraps. Every reader of a file or
// a request body converts through these instead; each returns nothing when the
// value is not a number of the asked kind, and the caller's error names the field.
//
// Header-only; depends on nothing in attn (nlohmann-json).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

namespace attn::config {

// A whole number that fits T (an integer type): an integer within T's range, or a
// float with no fraction within it (4.0, 1e3). Anything else (2e64, 1.5, inf,
// NaN, "7", true) gives nullopt.
template <class T>
std::optional<T> whole_number(const nlohmann::json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  using L = std::numeric_limits<T>;
  if (v.is_number_unsigned()) {  // before is_number_integer, which is also true for unsigned
    const uint64_t u = v.get<uint64_t>();
    if (u <= uint64_t(L::max())) return T(u);
    return std::nullopt;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (L::is_signed ? (i >= int64_t(L::min()) && i <= int64_t(L::max())) : (i >= 0 && uint64_t(i) <= uint64_t(L::max())))
      return T(i);
    return std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // [lo, hi + 1) as doubles: L::min() and 2^digits are exact; every double in
    // it converts exactly when it is whole
    const double lo = double(L::min()), hi_excl = std::ldexp(1.0, L::digits);
    if (d >= lo && d < hi_excl && d == std::trunc(d)) return T(d);
  }
  return std::nullopt;
}

// A finite number that is also finite as a float (1e300 is a finite double but
// converting it to float is undefined behaviour).
inline std::optional<float> finite_float(const nlohmann::json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > double(std::numeric_limits<float>::max())) return std::nullopt;
  return float(d);
}

}  // namespace attn::config
