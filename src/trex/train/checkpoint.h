// Checkpoints of a training run: one directory per step, published whole or not at all.
//
//   RUN/checkpoints/step-00000100/
//     model.safetensors      every parameter (the bf16-rounded values the model trains on, as
//                            F32) and the routing state (Transformer::save)
//     optimizer.safetensors  fp32 master weights and both moments, step count, groups
//                            (Optimizer::save_state)
//     state.json             step, data position, schedule, guard counters, config file
//     tokenizer.model        the SentencePiece model the run encodes with
//
// The directory is written as RUN/checkpoints/.tmp-step-00000100 and renamed when complete, so
// a run killed while writing leaves the previous checkpoints intact and no half checkpoint
// that a resume could pick. After a new checkpoint, all but the newest keep_last are removed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "trex/model/transformer.h"
#include "trex/optim/optimizer.h"
#include "trex/train/tokenizer.h"

namespace trex::train {

// "step-00000100".
std::string checkpoint_name(int64_t step);

// Writes the checkpoint of `step` under run_dir/checkpoints and prunes old ones. Returns its path.
std::string write_checkpoint(const std::string& run_dir, int64_t step, const model::Transformer& model,
                             optim::Optimizer& optimizer, const nlohmann::json& state, const Tokenizer& tok,
                             int64_t keep_last);

// A checkpoint directory (it holds state.json) as given, or the newest checkpoint of a run
// directory. Throws InputError (field "--resume") when there is none.
std::string resolve_checkpoint(const std::string& path);

// state.json of a checkpoint. Throws InputError naming the file.
nlohmann::json read_checkpoint_state(const std::string& checkpoint_dir);

}  // namespace trex::train
