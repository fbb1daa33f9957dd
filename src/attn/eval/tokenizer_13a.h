// The "13a" tokenizer of BLEU: mteval-v13a.pl's normalisation, as sacreBLEU
// implements it (sacrebleu/tokenizers/tokenizer_13a.py + tokenizer_re.py).
//
// All text is UTF-8; rules apply to code points, as Python's `re` does on str.
// The steps, in order:
//   1. remove "<skipped>"; remove "-\n" (a hyphenated line break); "\n" -> " "
//   2. unescape exactly four entities, in this order:
//      &quot; -> "   &amp; -> &   &lt; -> <   &gt; -> >
//   3. pad the line with one space on each side
//   4. put spaces around every char of {|}~ [\]^_` space!"#$%& ()*+ :;<=>?@ /
//      (note: not . , - or the apostrophe)
//   5. "x." / "x," -> "x . " / "x , "   unless x is a digit   (left to right,
//   6. ".x" / ",x" -> " . x" / " , x"   unless x is a digit    non-overlapping,
//   7. "9-"        -> "9 - "            (digit then dash)      like re.sub)
//   8. split on whitespace (Python's str.split()), join with single spaces.
// So "3.5" and "1,000" stay whole, "end." splits, and "well-known" stays whole.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attn::eval {

// The 13a-tokenized line, tokens joined by single spaces. Throws
// std::invalid_argument when `line` is not valid UTF-8.
std::string tokenize_13a(std::string_view line);

// Python's str.split(): the maximal runs of non-whitespace code points
// (whitespace as data::is_python_space). Input must be valid UTF-8.
std::vector<std::string> split_whitespace(std::string_view text);

// Python's str.rstrip(): `text` without trailing whitespace code points.
std::string_view rstrip_whitespace(std::string_view text);

}  // namespace attn::eval
