#include "attn/scenes/grammar.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace attn::scenes {
namespace {

// Builds one caption word by word, keeping tokens, refs and the written sentence in step.
class CaptionBuilder {
public:
  explicit CaptionBuilder(std::string phrasing) { c_.phrasing = std::move(phrasing); }

  // Words separated by spaces; each token refers to `ref`.
  CaptionBuilder& words(const std::string& text, int ref = -1) {
    std::istringstream in(text);
    for (std::string w; in >> w;) {
      c_.tokens.push_back(w);
      c_.refs.push_back(ref);
      c_.raw += (c_.raw.empty() || c_.raw.back() == ' ' ? "" : " ") + w;
    }
    return *this;
  }
  // Punctuation: in raw only (Karpathy's tokens have none).
  CaptionBuilder& punct(const std::string& p) {
    c_.raw += p;
    return *this;
  }
  CaptionBuilder& np(const Scene& s, int i) {
    const SceneObject& o = s.objects[size_t(i)];
    words("a");
    return words(size_names()[size_t(o.size)] + " " + colour_names()[size_t(o.colour)] + " " +
                     shape_names()[size_t(o.shape)],
                 i);
  }
  SceneCaption finish() {
    c_.raw[0] = char(std::toupper(static_cast<unsigned char>(c_.raw[0])));
    c_.raw += ".";
    return std::move(c_);
  }

private:
  SceneCaption c_;
};

// NP(order[0]) REL NP(order[1]) REL ... : a chain, each relation between its neighbours.
void chain(CaptionBuilder& b, const Scene& s, const std::vector<int>& order) {
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0) b.words(relation(s.objects[size_t(order[k - 1])], s.objects[size_t(order[k])]));
    b.np(s, order[k]);
  }
}

// NP, NP and NP
void list(CaptionBuilder& b, const Scene& s, const std::vector<int>& order) {
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0 && k + 1 == order.size()) b.words("and");
    b.np(s, order[k]);
    if (k + 2 < order.size()) b.punct(",");
  }
}

}  // namespace

std::vector<SceneCaption> describe(const Scene& scene) {
  const int n = int(scene.objects.size());
  if (n < 1 || n > 3) throw std::invalid_argument("describe: a scene has 1 to 3 objects, got " + std::to_string(n));
  std::vector<int> ltr, rtl;
  for (int i = 0; i < n; ++i) ltr.push_back(i), rtl.push_back(n - 1 - i);
  static const char* counts[] = {"one", "two", "three"};
  std::vector<SceneCaption> out;
  CaptionBuilder canonical("canonical");
  chain(canonical, scene, ltr);
  out.push_back(canonical.finish());
  CaptionBuilder reverse("reverse");
  chain(reverse.words("there is"), scene, rtl);
  out.push_back(reverse.finish());
  CaptionBuilder count("count");
  count.words(counts[n - 1]).words(n == 1 ? "shape" : "shapes").punct(":");
  list(count, scene, ltr);
  out.push_back(count.finish());
  CaptionBuilder image_of("image of");
  list(image_of.words("an image of"), scene, rtl);
  out.push_back(image_of.finish());
  return out;
}

}  // namespace attn::scenes
