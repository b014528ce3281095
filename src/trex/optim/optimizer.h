// What every trex optimizer shares: parameter groups over one flat parameter range, the step
// count, per-group hyperparameters, memory accounting, and checkpoints of the optimizer state.
//
// Parameters are one flat fp32 range of num_params() elements (the model keeps its parameters in
// one contiguous span, llm.c style); the groups cut it into consecutive pieces in the order given,
// each with its own AdamW hyperparameters (say, no weight decay for norms and biases). A step takes
// the flat fp32 gradient and writes the flat bf16 model weights.
//
// Checkpoints (save_state / load_state) are safetensors files with three F32 tensors of
// [num_params]: "master", "exp_avg", "exp_avg_sq", and metadata: format "trex.optim.adamw",
// version "1", the step count, and the groups as JSON (name, size, hyperparameters). Any
// optimizer can load any other's checkpoint (the in-memory AdamW and the swap optimizer write the
// same file), and a run resumed from one continues bit for bit. Take them between steps.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/kernels/adamw.h"
#include "trex/optim/memory_account.h"

namespace trex::optim {

struct ParamGroup {
  std::string name;
  int64_t size = 0;  // elements
  kernels::AdamWHyper hyper;
};

// A run of a logical optimizer state split by element ranges (ZeRO-1 shards): elements
// [at, at + count) of the file hold elements [offset, offset + count) of the whole (count -1: to
// the file's end). A file may hold several runs (one piece each). A whole-state file is one
// piece at 0.
struct StatePiece {
  std::string path;
  int64_t offset = 0;
  int64_t count = -1;
  int64_t at = 0;
};

// Which of the three state arrays.
enum class StateArray { kMaster = 0, kExpAvg = 1, kExpAvgSq = 2 };

class Optimizer {
 public:
  // Throws InputError (field "groups") for no groups, an empty or repeated name, a size < 1, or
  // a hyperparameter out of range (lr < 0, betas outside [0, 1), eps <= 0, weight decay < 0).
  explicit Optimizer(std::vector<ParamGroup> groups);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One AdamW step over all parameters. grads: [num_params()] fp32, read only. weights:
  // [num_params()] bf16, overwritten with the rounded master weights (nullptr: not wanted).
  virtual void step(const float* grads, core::bf16* weights) = 0;

  // Copies elements [offset, offset + count) of one state array to dst. Between steps only.
  virtual void read_state(StateArray which, int64_t offset, int64_t count, float* dst) = 0;

  int64_t step_count() const { return step_; }
  int64_t num_params() const { return num_params_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Element offset of group g in the flat range.
  int64_t group_offset(size_t g) const { return offsets_[g]; }
  // For schedules: the next steps use this learning rate in group g.
  void set_lr(size_t g, float lr);

  // Bytes of optimizer state held in memory now, and at most so far.
  const MemoryAccount& memory() const { return memory_; }

  // Writes the state atomically (see the header comment). Throws InputError naming the path.
  void save_state(const std::string& path);
  // Replaces the state, the step count and the groups' hyperparameters with the checkpoint's.
  // Throws InputError naming the path for a file that is not a safetensors file, is truncated,
  // is not a trex optimizer state, or was written for other groups; the state is unchanged then.
  void load_state(const std::string& path);
  // The same for elements [first, first + num_params()) of the logical state made of `pieces`
  // (written under any split, or whole): this optimizer's groups must be the pieces' groups
  // joined and cut to that range. Also throws InputError naming a piece whose step count differs
  // from the others', or the range when the pieces do not cover it.
  void load_state_range(const std::vector<StatePiece>& pieces, int64_t first);
  // The same for a state packed from the element ranges [begin, end) (ascending, disjoint, their
  // sizes adding up to num_params()): this optimizer's groups must be the pieces' groups cut to
  // the ranges, runs of one name joined.
  void load_state_ranges(const std::vector<StatePiece>& pieces, const std::vector<std::pair<int64_t, int64_t>>& ranges);

 protected:
  // Replaces elements [offset, offset + count) of all three arrays (load_state's back end). The
  // loader hands over pieces in increasing offset order.
  virtual void write_state(int64_t offset, int64_t count, const float* master,
                           const float* exp_avg, const float* exp_avg_sq) = 0;
  // The largest piece write_state should receive at once (memory bound of loading).
  virtual int64_t load_piece() const { return int64_t(1) << 20; }

  // The per-step scalars of every group for step number t.
  std::vector<kernels::AdamWScalars> scalars_for(int64_t t) const;

  std::vector<ParamGroup> groups_;
  std::vector<int64_t> offsets_;  // [groups + 1], offsets_.back() == num_params_
  int64_t num_params_ = 0;
  int64_t step_ = 0;
  MemoryAccount memory_;
};

}  // namespace trex::optim
