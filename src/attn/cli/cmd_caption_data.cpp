// `attn caption data --out DIR --count N --seed S [--size 64] [--val N] [--test N]`:
// attn's generated captioning data set (scenes/dataset.h).
// `attn caption sheet JSON [--images DIR] -o FILE [--count 12] [--split S] [--boxes]`:
// a contact sheet of a Karpathy-style corpus (scenes/contact_sheet.h).
#include <filesystem>
#include <iostream>

#include "attn/cli/commands.h"
#include "attn/data/caption_corpus.h"
#include "attn/scenes/contact_sheet.h"
#include "attn/scenes/dataset.h"

namespace attn::cli {
namespace {

void add_data(CLI::App& caption) {
  auto* cmd = caption.add_subcommand("data", "generate attn's captioning data set: shapes on textured backgrounds, "
                                             "captions, object boxes, train/val/test splits");
  auto o = std::make_shared<scenes::DatasetOptions>();
  cmd->add_option("--out", o->out_dir, "folder to write (DIR/dataset_shapes.json, DIR/images/*.png)")->required();
  cmd->add_option("--count", o->count, "images in all")->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed: the same seed writes the same files")->capture_default_str();
  cmd->add_option("--size", o->size, "width and height of the images, pixels (32 to 1024)")->capture_default_str();
  cmd->add_option("--val", o->val, "images in the val split (default: count / 10)");
  cmd->add_option("--test", o->test, "images in the test split (default: count / 10)");
  cmd->callback([o] {
    const scenes::DatasetSummary s = scenes::write_dataset(*o);
    std::cout << "wrote " << s.json_path << ": " << s.train << " train, " << s.val << " val, " << s.test
              << " test images (" << s.objects[0] << " with one object, " << s.objects[1] << " with two, "
              << s.objects[2] << " with three; " << s.occluded << " objects partly hidden)\n";
  });
}

void add_sheet(CLI::App& caption) {
  auto* cmd = caption.add_subcommand("sheet", "draw a contact sheet of a captioning corpus: images with their first caption");
  struct Opts {
    std::string json, images, output;
    scenes::SheetOptions sheet;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("json", o->json, "Karpathy-style split file (dataset_*.json)")->required();
  cmd->add_option("--images", o->images, "folder the file's image paths are relative to (default: the file's folder)");
  cmd->add_option("-o,--output", o->output, "figure to write: .png or .pdf")->required();
  cmd->add_option("--count", o->sheet.count, "images on the sheet")->capture_default_str();
  cmd->add_option("--columns", o->sheet.columns, "images per row")->capture_default_str();
  cmd->add_option("--cell", o->sheet.cell, "pixels each image is scaled to fit")->capture_default_str();
  cmd->add_option("--split", o->sheet.split, "only images of this split")
      ->check(CLI::IsMember(data::caption_split_names()));
  cmd->add_flag("--boxes", o->sheet.boxes, "outline each object's box (generated data sets)");
  cmd->add_option("--title", o->sheet.title, "title above the grid");
  cmd->callback([o] {
    const std::string root =
        o->images.empty() ? std::filesystem::path(o->json).parent_path().string() : o->images;
    const data::CaptionCorpus corpus = data::read_caption_corpus(o->json, root, {/*check_files=*/false});
    scenes::write_contact_sheet(corpus, o->output, o->sheet);
  });
}

}  // namespace

void add_caption_data_commands(CLI::App& caption) {
  add_data(caption);
  add_sheet(caption);
}

}  // namespace attn::cli
