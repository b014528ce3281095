// Shared by the dist tests: a tiny V4 config with hash- and score-routed layers and MTP, a run
// of `trex train` under mpirun, and the losses of a run directory.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/test_text.h"
#include "trex/core/safetensors.h"
#include "trex/train/checkpoint.h"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex::dist::testing {

using train::testing::TempDir;

// v4-nano shrunk: 2 layers (the first hash-routed), 4 routed experts, an MTP block.
constexpr const char* kTinyModel = R"(
[model]
name = "v4-tiny-mtp"
source = "trex tests"
vocab = 512
hidden = 64
layers = 2
mtp_depth = 1
norm_eps = 1e-6
train_seq_len = 128

[attention]
kind = "v4"
heads = 2
kv_heads = 1
head_dim = 32
rope_dims = 16
q_lora_rank = 32
window = 16
o_groups = 2
o_lora_rank = 16
compress_ratios = [0, 4]

[indexer]
heads = 2
head_dim = 16
top_k = 8

[mhc]
streams = 2
sinkhorn_iters = 5

[ffn]
activation = "swiglu"
swiglu_limit = 10
routed_experts = 4
shared_experts = 1
top_k = 2
expert_hidden = 64
hash_layers = 1
score_function = "sqrtsoftplus"
bias_update_rate = 0.01
)";

// A train config of 4 micro-batches per step over the licence texts. extra: more TOML at the end.
inline std::string write_config(const TempDir& dir, const std::string& name, const std::string& extra = "",
                                const std::string& tokenizer = "") {
  dir.write("tiny.toml", kTinyModel);
  std::string cfg = "[run]\nmodel = \"tiny.toml\"\nseed = 5\nseq = 64\nrows = 1\nmicro_batches = 4\nsteps = 3\n"
                    "log_every = 0\n\n[tokenizer]\nsample_bytes = 100000\n" +
                    (tokenizer.empty() ? "" : "file = \"" + tokenizer + "\"\n") +
                    "\n[optimizer]\nlr = 1e-2\nmin_lr = 1e-3\nwarmup = 1\nweight_decay = 0.01\nclip_norm = 1.0\n"
                    "\n[checkpoint]\nevery = 0\nkeep_last = 3\n\n[[data]]\nkind = \"text\"\npath = \"" +
                    train::testing::licenses_dir() + "\"\n" + extra;
  return dir.write(name, cfg);
}

// mpirun -n ranks --oversubscribe PROGRAM ARGS, as root too, with a time limit.
inline ProcessResult mpirun(int ranks, const std::vector<std::string>& program_args, double timeout_s = 240) {
  std::vector<std::string> argv = {"env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                   "OMPI_MCA_rmaps_base_oversubscribe=1", "mpirun", "-n", std::to_string(ranks),
                                   "--oversubscribe", "--bind-to", "none"};
  argv.insert(argv.end(), program_args.begin(), program_args.end());
  ProcessOptions o;
  o.timeout_s = timeout_s;
  return run_process(argv, o);
}

// The loss of every step in RUN/metrics.jsonl.
inline std::vector<double> losses_of(const std::string& run_dir) {
  std::vector<double> out;
  std::string text = read_file(run_dir + "/metrics.jsonl");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    nlohmann::json j = nlohmann::json::parse(text.substr(pos, nl - pos));
    out.push_back(j.at("loss").get<double>());
    pos = nl + 1;
  }
  return out;
}

// A checkpoint's logical optimizer state, whatever the split: the step, then master, exp_avg and
// exp_avg_sq over all parameters, as bytes (from optimizer.safetensors or the shards).
inline std::string optimizer_state_bytes(const std::string& checkpoint_dir) {
  std::vector<optim::StatePiece> pieces = train::optimizer_state_pieces(checkpoint_dir);
  std::sort(pieces.begin(), pieces.end(), [](const optim::StatePiece& a, const optim::StatePiece& b) { return a.offset < b.offset; });
  std::string arrays[3], step;
  for (const optim::StatePiece& p : pieces) {  // (a piece: elements [at, at + count) of its file)
    core::SafetensorsFile f(p.path);
    if (step.empty()) step = "step " + f.metadata().at("step") + "\n";
    int a = 0;
    for (const char* name : {"master", "exp_avg", "exp_avg_sq"}) {
      std::span<const std::byte> b = f.bytes(f.get(name));
      const size_t from = size_t(p.at) * 4, bytes = p.count < 0 ? b.size() - from : size_t(p.count) * 4;
      arrays[a++].append(reinterpret_cast<const char*>(b.data()) + from, bytes);
    }
  }
  return step + arrays[0] + arrays[1] + arrays[2];
}

inline bool mpirun_available() { return program_available("mpirun"); }

}  // namespace trex::dist::testing
