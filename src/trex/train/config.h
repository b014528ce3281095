// A training run as plain data, read from a TOML file under configs/train/ (every key in
// docs/train.md). Unknown keys are errors; every error is one line naming FILE:LINE: field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/model/config.h"
#include "trex/train/dataset.h"
#include "trex/train/schedule.h"
#include "trex/train/tokenizer.h"

namespace trex::train {

enum class TrainMode { kCpt, kSft };

struct TrainConfig {
  std::string file;        // where it was read from
  // [run]
  std::string model_file;  // resolved beside the config
  model::ModelConfig model;
  TrainMode mode = TrainMode::kCpt;
  uint64_t seed = 1;
  int64_t seq = 512;
  int64_t rows = 4;            // rows of seq tokens per micro-batch
  int64_t micro_batches = 1;   // gradients accumulated over this many micro-batches per step
  // "cut": documents back to back, cut at row ends; "whole": a document never crosses rows
  // (padding ends a row it does not fit in; one longer than seq keeps its first seq tokens);
  // "first-fit": whole, rows filled first-fit from a lookahead of 16 documents (packing.h).
  std::string packing = "cut";
  int64_t steps = 100;
  bool mtp = true;             // train the config's MTP blocks (when it has any)
  // Weights are always bf16-rounded (the optimizer's bf16 output); "bf16" also rounds the
  // activations kept across ops to bf16 (model::Precision::kBf16), "fp32" keeps them fp32.
  std::string activations = "fp32";
  int64_t log_every = 10;      // a printed line every N steps (0: none)
  // A checkpoint (or run directory: its newest) whose weights and tokenizer start this run;
  // the optimizer and the data start fresh (SFT after CPT).
  std::string init_from;
  // [tokenizer]
  TokenizerOptions tokenizer;  // vocab = the model's
  int64_t tokenizer_sample_bytes = 4 << 20;  // text sampled from the sources to train it
  std::string tokenizer_file;  // a SentencePiece model to use instead of training one
  // [[tokenizer.data]]: the sources whose text trains the tokenizer instead of [[data]]'s (same
  // keys; weights share sample_bytes), e.g. general text plus the OR corpus for a base run that
  // trains on general text alone but whose tokenizer later CPT and SFT runs inherit.
  std::vector<SourceSpec> tokenizer_data;
  // [optimizer]
  std::string optimizer = "adamw";  // adamw | swap
  Schedule schedule;
  double weight_decay = 0.1;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double clip_norm = 1.0;      // 0: no clipping
  // Which gradient norm the clipping scale comes from: "current", the step's own (exact, known
  // only after the whole backward); "previous", the last finished step's, known before the
  // backward (what lets the overlapped swap update clip without redoing the step).
  std::string clip_with = "current";
  std::string swap_dir;        // swap: where the swap file goes (default: the run directory)
  int64_t swap_chunk = 1 << 18;  // swap: elements per chunk
  int swap_slots = 3;
  // swap: [optimizer] swap_memory_mb, the resident budget of the slots (swap_slots x 12 B x
  // swap_chunk). Without swap_chunk it sets the chunk (the largest that fits); with it, a budget
  // too small for the K chunks is an error naming the field. Not kept here: it is spent on swap_chunk.
  bool swap_direct = true;     // swap: O_DIRECT (the tier is the disk, not the page cache)
  // swap, one process: update each chunk during the last micro-batch's backward, as soon as its
  // gradient is final (docs/optim.md); false: one whole step after the backward.
  bool swap_overlap = true;
  // [checkpoint]
  int64_t checkpoint_every = 100;  // 0: only the final one
  int64_t keep_last = 2;
  // [guard]
  int64_t nan_limit = 5;       // stop after this many non-finite steps in a row
  // Debug only (tests of the guard): after the backward of these steps, one gradient
  // element is set to NaN, so the step must be skipped.
  std::vector<long> nan_at_step;
  // [parallel] (docs/dist.md): the layout of a run under mpirun; 0 = not given.
  int dp = 0, ep = 0, etp = 0;
  double dist_timeout_s = 0;      // a rank waiting longer in one collective ends the run (0: default)
  // Debug only (tests of the watchdog): rank dist_stall[0] stops at step dist_stall[1].
  int64_t dist_stall_rank = -1, dist_stall_step = -1;
  // Debug only (tests of a dying rank): rank debug_die[0] kills itself (SIGKILL) at step debug_die[1].
  int64_t dist_die_rank = -1, dist_die_step = -1;
  // [[data]]
  std::vector<SourceSpec> data;
};

// Reads and checks the config and the model config it names. Throws InputError.
TrainConfig load_train_config(const std::string& path);
// The config alone: model_file is resolved but not read (model and tokenizer.vocab are left
// unset), for a caller that decides the model itself (a checkpoint's record: model_record.h).
TrainConfig load_train_config_without_model(const std::string& path);
// Sets c.model and what derives from it (tokenizer.vocab). Throws InputError naming c.file when
// `m` is not a V4 model.
void set_train_model(TrainConfig& c, model::ModelConfig m);

const char* to_string(TrainMode m);

}  // namespace trex::train
