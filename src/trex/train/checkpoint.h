// Checkpoints of a training run: one directory per step, published whole or not at all.
//
//   RUN/checkpoints/step-00000100/
//     model.safetensors      every parameter (the bf16-rounded values the model trains on, as
//                            F32) and the routing state (Transformer::save)
//     optimizer.safetensors  fp32 master weights and both moments, step count, groups
//                            (Optimizer::save_state); under mpirun (ZeRO-1: each rank holds
//                            one shard of the optimizer state) instead one file per rank,
//     optimizer-rank-00001-of-00004.safetensors   each its shard in the same format (a shard
//                            is a list of element ranges, packed: dist/shard_map.h), and
//     optimizer.index.json   {"format": "trex.optim.shards", "params": N, "shards": [{"file":
//                            ..., "offset": first element, "count": elements, "at": where
//                            they start in the file}, ...]} (one entry per range; "at"
//                            absent: 0): the same logical state, loadable under any layout
//                            (optimizer_state_pieces).
//     state.json             step, data position, schedule, guard counters, config file
//     tokenizer.model        the SentencePiece model the run encodes with
//
// The directory is written as RUN/checkpoints/.tmp-step-00000100-TAG and renamed when complete, so
// a run killed while writing leaves the previous checkpoints intact and no half checkpoint
// that a resume could pick. After a new checkpoint, all but the newest keep_last are removed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>
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
// The same with the optimizer state written by write_optimizer(temporary directory) (the ranks
// of a sharded run each write their shard there; see trainer.cc), in a temporary directory
// named with tmp_tag (the same on every rank).
std::string write_checkpoint(const std::string& run_dir, int64_t step, const model::Transformer& model,
                             const std::function<void(const std::string&)>& write_optimizer,
                             const std::string& tmp_tag, const nlohmann::json& state, const Tokenizer& tok,
                             int64_t keep_last);
// The temporary directory write_checkpoint uses for `step` and tmp_tag.
std::string checkpoint_tmp_dir(const std::string& run_dir, int64_t step, const std::string& tmp_tag);

// Rank `rank`'s optimizer shard file name among `ranks`: "optimizer-rank-00001-of-00004.safetensors".
std::string optimizer_shard_name(int rank, int ranks);
// Writes CHECKPOINT_DIR/optimizer.index.json naming the shards atomically: rank q's file holds
// the element ranges ranges[q] ({begin, end}, ascending), packed.
void write_optimizer_index(const std::string& checkpoint_dir, int64_t params,
                           const std::vector<std::vector<std::pair<int64_t, int64_t>>>& ranges);
// The pieces of a checkpoint's optimizer state: its index's shards, or optimizer.safetensors
// whole. Throws InputError naming the index for a malformed one.
std::vector<optim::StatePiece> optimizer_state_pieces(const std::string& checkpoint_dir);

// A checkpoint directory (it holds state.json) as given, or the newest checkpoint of a run
// directory. Throws InputError (field "--resume") when there is none.
std::string resolve_checkpoint(const std::string& path);

// state.json of a checkpoint. Throws InputError naming the file.
nlohmann::json read_checkpoint_state(const std::string& checkpoint_dir);

}  // namespace trex::train
