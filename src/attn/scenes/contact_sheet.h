// `attn caption sheet`: a contact sheet of a captioning corpus, any
// Karpathy-style one: the first images (of a split) in a grid, each with its
// first caption under it and, on request, its objects' boxes (generated
// scenes), to look at what a data set holds.
#pragma once
#include <string>

#include "attn/data/caption_corpus.h"

namespace attn::scenes {

struct SheetOptions {
  int count = 12;          // images on the sheet (fewer when the corpus has fewer)
  int columns = 4;
  int cell = 192;          // each image scaled to fit a cell x cell square (aspect kept)
  bool boxes = false;      // outline each object's box, labelled with its index
  std::string split;       // only images of this split ("" = all)
  std::string title;       // above the grid ("" = none)
};

// Draws the sheet to `path` (.png or .pdf, replaced atomically). Throws
// std::invalid_argument for bad options or an empty selection, std::runtime_error
// naming an image file that cannot be read.
void write_contact_sheet(const data::CaptionCorpus& corpus, const std::string& path, const SheetOptions& options);

}  // namespace attn::scenes
