#include "attn/eval/tokenizer_13a.h"

#include <stdexcept>

#include "attn/data/utf8.h"

namespace attn::eval {

namespace {

using data::is_python_space;

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool is_period_or_comma(char32_t c) { return c == U'.' || c == U','; }

// Step 4's character class: {-~  [-`  space-&  (-+  :-@  /
bool is_split_symbol(char32_t c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
         (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == U'/';
}

// Python's str.replace: every non-overlapping occurrence, left to right.
std::u32string replace_all(const std::u32string& s, std::u32string_view from, std::u32string_view to) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (true) {
    const size_t hit = s.find(from, i);
    if (hit == std::u32string::npos) break;
    out.append(s, i, hit - i);
    out.append(to);
    i = hit + from.size();
  }
  out.append(s, i, std::u32string::npos);
  return out;
}

// re.sub for a two-character pattern (a)(b): scan left to right; where
// first(s[i]) && second(s[i+1]) holds, emit `pre a mid b post` and skip both
// characters, otherwise copy s[i]. Matches never overlap, as in re.sub.
template <class First, class Second>
std::u32string sub_pair(const std::u32string& s, First first, Second second, std::u32string_view pre,
                        std::u32string_view mid, std::u32string_view post) {
  std::u32string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out.append(pre);
      out.push_back(s[i]);
      out.append(mid);
      out.push_back(s[i + 1]);
      out.append(post);
      i += 2;
    } else {
      out.push_back(s[i]);
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string tokenize_13a(std::string_view line) {
  std::u32string s = data::decode_utf8(line);

  // 1-2: language-independent normalisation
  s = replace_all(s, U"<skipped>", U"");
  s = replace_all(s, U"-\n", U"");
  s = replace_all(s, U"\n", U" ");
  s = replace_all(s, U"&quot;", U"\"");
  s = replace_all(s, U"&amp;", U"&");
  s = replace_all(s, U"&lt;", U"<");
  s = replace_all(s, U"&gt;", U">");

  // 3-4: pad, then isolate symbols
  std::u32string t;
  t.reserve(s.size() * 2 + 2);
  t.push_back(U' ');
  for (char32_t c : s) {
    if (is_split_symbol(c)) {
      t.push_back(U' ');
      t.push_back(c);
      t.push_back(U' ');
    } else {
      t.push_back(c);
    }
  }
  t.push_back(U' ');

  // 5-7: period, comma and dash rules
  const auto not_digit = [](char32_t c) { return !is_digit(c); };
  const auto dash = [](char32_t c) { return c == U'-'; };
  t = sub_pair(t, not_digit, is_period_or_comma, U"", U" ", U" ");
  t = sub_pair(t, is_period_or_comma, not_digit, U" ", U" ", U"");
  t = sub_pair(t, is_digit, dash, U"", U" ", U" ");

  // 8: collapse whitespace
  std::u32string out;
  out.reserve(t.size());
  bool pending_space = false;
  for (char32_t c : t) {
    if (is_python_space(c)) {
      pending_space = !out.empty();
    } else {
      if (pending_space) out.push_back(U' ');
      pending_space = false;
      out.push_back(c);
    }
  }
  return data::encode_utf8(out);
}

std::vector<std::string> split_whitespace(std::string_view text) {
  std::vector<std::string> tokens;
  const std::u32string s = data::decode_utf8(text);
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_python_space(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !is_python_space(s[j])) ++j;
    if (j > i) tokens.push_back(data::encode_utf8(std::u32string_view(s).substr(i, j - i)));
    i = j;
  }
  return tokens;
}

std::string_view rstrip_whitespace(std::string_view text) {
  // Walk back over whole code points: a UTF-8 continuation byte is 10xxxxxx.
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    const std::u32string cp = data::decode_utf8(text.substr(start, end - start));
    if (cp.size() != 1 || !is_python_space(cp[0])) break;
    end = start;
  }
  return text.substr(0, end);
}

}  // namespace attn::eval
