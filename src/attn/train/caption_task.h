// The training task of the captioning model (show_attend_tell): a Karpathy
// split JSON over a folder of images (data/caption_corpus.h; data.captions,
// data.image_root), e.g. attn's generated scenes (`attn caption data`) or
// Flickr8k / COCO.
//
//   examples     one per (training image, caption): train + restval splits;
//                captions longer than data.max_tgt_tokens pieces are dropped
//   images       decoded and resized to model.image_size once (image/image_cache.h),
//                normalised with ImageNet's statistics per batch
//   vocabulary   out_dir/vocab.tgt.model: SentencePiece trained on the training
//                captions (vocab.size, vocab.type), or a copy of vocab.tgt_model;
//                reloaded when resuming. The model has no source vocabulary.
//   batches      data/batcher.h over the caption lengths (token budget
//                train.max_tokens, train.max_sentences; deterministic per epoch)
//   validation   the val split: perplexity over every (image, caption) pair;
//                BLEU-4 of the decoded captions (train.valid_beam, greedy at 1) of
//                the first train.valid_bleu_sentences images (0: all) against all
//                of each image's captions; exact match: the share of decoded
//                captions equal to one of their references
#pragma once
#include <memory>

#include "attn/image/image.h"
#include "attn/train/task.h"

namespace attn::train {

// Reads the corpus and its images and makes the vocabulary; throws naming the
// file or field (data.captions, an image, an empty split).
std::unique_ptr<TrainingTask> make_caption_task(const TrainConfig& config, bool resume, const PrintFn& print);

// The normalisation every captioning input gets (ImageNet's statistics, as
// for a pretrained CNN; a model trained here only needs it to be fixed).
inline image::Normalization caption_normalization() { return image::imagenet_normalization(); }

}  // namespace attn::train
