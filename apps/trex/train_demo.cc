// trex demo, training step: a tiny DeepSeek-V4-shaped model (2 layers, CSA attention with the
// lightning indexer, hash- and score-routed MoE, mHC) trained for 30 steps on the licence texts
// every Debian system ships, then resumed from its step-15 checkpoint to show the resumed run
// lands on the same weights, then sampled greedily through the KV-cached generator, then served
// over HTTP and evaluated (serve_demo.h).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "serve_demo.h"
#include "trex/model/config.h"
#include "trex/model/generator.h"
#include "trex/model/transformer.h"
#include "trex/train/config.h"
#include "trex/train/tokenizer.h"
#include "trex/train/trainer.h"
#include "trex/util/atomic_file.h"

namespace trex::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLicenses = "/usr/share/common-licenses";

constexpr const char* kModel = R"([model]
name = "v4-demo"
source = "trex demo"
vocab = 512
hidden = 64
layers = 2
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
streams = 4
sinkhorn_iters = 20

[ffn]
activation = "swiglu"
swiglu_limit = 10
routed_experts = 4
shared_experts = 1
top_k = 2
expert_hidden = 64
hash_layers = 1
score_function = "sqrtsoftplus"
)";

std::string train_config(int steps) {
  return "[run]\nmodel = \"model.toml\"\nseed = 1\nseq = 128\nrows = 2\nsteps = " +
         std::to_string(steps) +
         "\nlog_every = 0\n\n[tokenizer]\nsample_bytes = 200000\n\n"
         "[optimizer]\nlr = 1e-2\nmin_lr = 1e-3\nwarmup = 3\nweight_decay = 0.01\nclip_norm = 1.0\n\n"
         "[checkpoint]\nevery = 15\nkeep_last = 3\n\n[[data]]\nkind = \"text\"\npath = \"" +
         std::string(kLicenses) + "\"\nweight = 1.0\n";
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return s / double(to - from);
}

std::string read_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

int train_demo() {
  if (!fs::is_directory(kLicenses)) {
    std::printf("trex demo: training skipped (%s is absent)\n", kLicenses);
    return 0;
  }
  const fs::path dir = fs::temp_directory_path() / ("trex_demo_train_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_file_atomic((dir / "model.toml").string(), kModel);
  write_file_atomic((dir / "train.toml").string(), train_config(30));
  const train::TrainConfig config = train::load_train_config((dir / "train.toml").string());

  train::TrainOptions o;
  o.progress = false;
  o.print = false;
  o.out_dir = (dir / "full").string();
  const train::TrainResult full = train::run_training(config, o);
  bool ok = full.skipped_steps == 0 && full.losses.size() == 30;
  std::printf("trex demo: training a 2-layer V4 model (%s) for 30 steps on %s\n",
              "CSA + indexer, hash and score-routed MoE, mHC", kLicenses);
  std::printf("  loss %.3f (steps 1-3) -> %.3f (steps 28-30), %ld skipped, %.0f tokens/s\n",
              mean(full.losses, 0, 3), mean(full.losses, 27, 30), long(full.skipped_steps),
              full.tokens_per_s);

  // The same run stopped after step 15, then resumed from that checkpoint.
  o.out_dir = (dir / "resumed").string();
  o.stop_after = 15;
  train::run_training(config, o);
  o.stop_after = 0;
  o.resume = o.out_dir;
  const train::TrainResult rest = train::run_training(config, o);
  const std::string a = read_bytes((fs::path(full.checkpoint) / "model.safetensors").string());
  const std::string b = read_bytes((fs::path(rest.checkpoint) / "model.safetensors").string());
  const bool same = !a.empty() && a == b;
  std::printf("  stopped at step 15 and resumed: weights after step 30 %s\n",
              same ? "identical to the uninterrupted run" : "DIFFER from the uninterrupted run");
  ok = ok && same;

  // Greedy decoding from the final checkpoint.
  const model::ModelConfig mc = model::load_model_config((dir / "model.toml").string());
  model::Transformer m(mc, 0);
  const std::string weights = (fs::path(full.checkpoint) / "model.safetensors").string();
  m.load(weights);
  model::Generator gen(m);
  gen.load_routing_state(weights);
  const train::Tokenizer tok =
      train::Tokenizer::load((fs::path(full.checkpoint) / "tokenizer.model").string());
  const std::string prompt = "Permission is hereby granted";
  std::vector<int32_t> ids = {tok.bos_id()};
  for (int32_t id : tok.encode(prompt)) ids.push_back(id);
  model::SamplingOptions so;
  so.max_tokens = 12;
  so.stop_ids = {tok.eos_id()};
  so.vocab_limit = full.vocab_used;
  std::string text = tok.decode(gen.generate(ids, so));
  for (char& c : text)
    if (c == '\n') c = ' ';
  std::printf("  trex generate (greedy, KV cache): \"%s\" -> \"%s\"\n", prompt.c_str(),
              text.c_str());

  // The same checkpoint served over HTTP and evaluated, as the recipe's serve stages do.
  ok = serve_and_evaluate_demo((dir / "full").string(), dir.string()) == 0 && ok;
  fs::remove_all(dir);
  return ok ? 0 : 1;
}

const DemoStepRegistration kTrainDemoStep(80, train_demo);

}  // namespace

}  // namespace trex::cli
