// A checkpoint records the model config it was trained with (model_record.h), on real files
// written by the trainer: the shared loader of trex serve and trex generate
// (load_inference_checkpoint) and a training resume refuse a model file changed since
// (rope_dims 16 -> 32, the same parameter shapes) with an error naming the checkpoint, the
// field and both values, whether the config comes through the train config's path or
// --model-config; an unchanged config loads the recorded model and computes the same logits as
// the trained weights under the original config; a checkpoint written before the record
// existed still loads from the path, with a one-line warning.
#include "trex/train/model_record.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "test_text.h"
#include "trex/model/transformer.h"
#include "trex/train/checkpoint.h"
#include "trex/train/config.h"
#include "trex/train/inference_checkpoint.h"
#include "trex/train/trainer.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// A small V4 model; ROPE is replaced by the rotary width under test.
constexpr const char* kModel = R"(
[model]
name = "v4-record"
source = "trex tests"
vocab = 512
hidden = 32
layers = 2
mtp_depth = 0
norm_eps = 1e-6
train_seq_len = 64

[attention]
kind = "v4"
heads = 2
kv_heads = 1
head_dim = 32
rope_dims = ROPE
q_lora_rank = 16
window = 16
o_groups = 2
o_lora_rank = 8
compress_ratios = [0, 4]

[indexer]
heads = 2
head_dim = 32
top_k = 4

[mhc]
streams = 2
sinkhorn_iters = 5

[ffn]
activation = "swiglu"
swiglu_limit = 10
routed_experts = 4
shared_experts = 1
top_k = 2
expert_hidden = 32
hash_layers = 1
score_function = "sqrtsoftplus"
)";

std::string model_text(int rope_dims) {
  std::string t = kModel;
  t.replace(t.find("ROPE"), 4, std::to_string(rope_dims));
  return t;
}

// Writes tiny.toml (rope_dims 16) and a train config naming it; returns the train config.
std::string write_run_config(const TempDir& dir) {
  dir.write("tiny.toml", model_text(16));
  return dir.write("train.toml",
                   "[run]\nmodel = \"tiny.toml\"\nseed = 3\nseq = 64\nrows = 2\nsteps = 4\nlog_every = 0\n"
                   "\n[tokenizer]\nsample_bytes = 100000\n"
                   "\n[optimizer]\nlr = 1e-2\nmin_lr = 1e-3\nwarmup = 1\nweight_decay = 0.01\nclip_norm = 1.0\n"
                   "\n[checkpoint]\nevery = 0\nkeep_last = 2\n"
                   "\n[[data]]\nkind = \"text\"\npath = \"" + testing::licenses_dir() + "\"\nweight = 1.0\n");
}

TrainOptions quiet(const std::string& out, int64_t steps, int64_t stop_after = 0) {
  TrainOptions o;
  o.out_dir = out;
  o.progress = false;
  o.print = false;
  o.steps = steps;
  o.stop_after = stop_after;
  return o;
}

// The main head's logits of `m` on a fixed sequence.
std::vector<float> logits_of(model::Transformer& m) {
  model::Batch b;
  b.tokens = 24;
  for (int i = 0; i < 24; ++i) b.ids.push_back((i * 37 + 5) % 400), b.targets.push_back((i * 37 + 42) % 400);
  std::vector<float> out;
  m.forward(b, &out);
  return out;
}

// Runs f with stderr sent to a file; returns what it wrote there.
template <class F>
std::string stderr_of(const TempDir& dir, F f) {
  const std::string path = dir.path("stderr.txt");
  std::fflush(stderr);
  const int saved = dup(2);
  const int to = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(to, 2);
  close(to);
  f();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  return read_file(path);
}

// Trains 2 steps with rope_dims 16 and returns the checkpoint directory.
std::string train_checkpoint(const TempDir& dir) {
  const TrainConfig c = load_train_config(write_run_config(dir));
  run_training(c, quiet(dir.path("run"), 4, 2));
  return resolve_checkpoint(dir.path("run"));
}

TEST(ModelRecord, CheckpointRecordsItsModelConfig) {
  TempDir dir("record-written");
  const std::string ckpt = train_checkpoint(dir);
  const nlohmann::json state = read_checkpoint_state(ckpt);
  ASSERT_TRUE(state.contains("model_config")) << state.dump();
  EXPECT_EQ(state["model_config"]["text"].get<std::string>(), model_text(16));
  EXPECT_EQ(state["model_config"]["fields"]["attention.rope_dims"], "16");
  EXPECT_EQ(state["model_config"]["hash"].get<std::string>().rfind("fnv1a64:", 0), 0u);
  std::optional<model::ModelConfig> m = recorded_model(state, ckpt + "/state.json");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->attention.rope_dims, 16);
  EXPECT_EQ(model_fields(*m), model_fields(model::load_model_config(dir.path("tiny.toml"))));
}

TEST(ModelRecord, ServeAndGenerateLoaderRefusesAChangedModelFile) {
  TempDir dir("record-changed");
  const std::string ckpt = train_checkpoint(dir);
  dir.write("tiny.toml", model_text(32));  // the model file changes after training
  // Through the train config's path (no --model-config).
  try {
    load_inference_checkpoint(dir.path("run"));
    ADD_FAILURE() << "loaded a rope_dims 16 checkpoint with a rope_dims 32 model file";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("--ckpt"), std::string::npos) << w;
    EXPECT_NE(w.find(ckpt), std::string::npos) << w;
    EXPECT_NE(w.find("attention.rope_dims = 16"), std::string::npos) << w;
    EXPECT_NE(w.find("has 32"), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << w;
  }
  // Through --model-config.
  try {
    load_inference_checkpoint(dir.path("run"), dir.path("tiny.toml"));
    ADD_FAILURE() << "loaded a rope_dims 16 checkpoint with --model-config of rope_dims 32";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("--model-config " + dir.path("tiny.toml")), std::string::npos) << w;
    EXPECT_NE(w.find("attention.rope_dims = 16"), std::string::npos) << w;
  }
}

TEST(ModelRecord, ResumeRefusesAChangedModelFile) {
  TempDir dir("record-resume");
  const std::string ckpt = train_checkpoint(dir);
  dir.write("tiny.toml", model_text(32));
  const TrainConfig changed = load_train_config(dir.path("train.toml"));
  TrainOptions o = quiet(dir.path("run"), 4);
  o.resume = dir.path("run");
  try {
    run_training(changed, o);
    ADD_FAILURE() << "resumed a rope_dims 16 checkpoint with rope_dims 32";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("--resume"), std::string::npos) << w;
    EXPECT_NE(w.find("attention.rope_dims = 16"), std::string::npos) << w;
    EXPECT_NE(w.find("has 32"), std::string::npos) << w;
  }
  EXPECT_FALSE(fs::exists(dir.path("run/checkpoints/step-00000004")));
}

TEST(ModelRecord, SameConfigLoadsTheTrainedModelUnchanged) {
  TempDir dir("record-same");
  const std::string ckpt = train_checkpoint(dir);
  // The reference: the original config with the trained weights.
  model::Transformer ref(model::load_model_config(dir.path("tiny.toml")), 0, false);
  ref.load(ckpt + "/model.safetensors");
  const std::vector<float> want = logits_of(ref);
  ASSERT_FALSE(want.empty());
  std::string err = stderr_of(dir, [&] {
    InferenceCheckpoint a = load_inference_checkpoint(dir.path("run"));
    EXPECT_EQ(a.model->config().attention.rope_dims, 16);
    EXPECT_EQ(logits_of(*a.model), want);
    InferenceCheckpoint b = load_inference_checkpoint(dir.path("run"), dir.path("tiny.toml"));
    EXPECT_EQ(logits_of(*b.model), want);
  });
  EXPECT_EQ(err, "");
  // The train config gone (a moved run): the record alone describes the model.
  fs::remove(dir.path("train.toml"));
  fs::remove(dir.path("tiny.toml"));
  InferenceCheckpoint c = load_inference_checkpoint(dir.path("run"));
  EXPECT_EQ(logits_of(*c.model), want);
  // The resume of an unchanged config goes on.
  TempDir dir2("record-same-resume");
  const TrainConfig c2 = load_train_config(write_run_config(dir2));
  run_training(c2, quiet(dir2.path("run"), 4, 2));
  TrainOptions o = quiet(dir2.path("run"), 4);
  o.resume = dir2.path("run");
  EXPECT_EQ(run_training(c2, o).last_step, 4);
}

TEST(ModelRecord, OldCheckpointLoadsFromThePathWithAWarning) {
  TempDir dir("record-old");
  const std::string ckpt = train_checkpoint(dir);
  // As written before checkpoints recorded the model.
  nlohmann::json state = read_checkpoint_state(ckpt);
  state.erase("model_config");
  write_file_atomic(ckpt + "/state.json", state.dump(2));
  model::Transformer ref(model::load_model_config(dir.path("tiny.toml")), 0, false);
  ref.load(ckpt + "/model.safetensors");
  std::string err = stderr_of(dir, [&] {
    InferenceCheckpoint a = load_inference_checkpoint(dir.path("run"));
    EXPECT_EQ(logits_of(*a.model), logits_of(ref));
  });
  EXPECT_NE(err.find("warning: " + ckpt + " records no model config"), std::string::npos) << err;
  EXPECT_NE(err.find("cannot be checked"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // A resume of it warns the same way and goes on.
  const TrainConfig c = load_train_config(dir.path("train.toml"));
  TrainOptions o = quiet(dir.path("run"), 4);
  o.resume = dir.path("run");
  err = stderr_of(dir, [&] { EXPECT_EQ(run_training(c, o).last_step, 4); });
  EXPECT_NE(err.find("warning: " + ckpt + " records no model config"), std::string::npos) << err;
}

TEST(ModelRecord, MalformedRecordIsAnErrorNamingTheFile) {
  TempDir dir("record-bad");
  const std::string ckpt = train_checkpoint(dir);
  nlohmann::json state = read_checkpoint_state(ckpt);
  state["model_config"]["fields"]["attention.rope_dims"] = "64";  // disagrees with its text
  write_file_atomic(ckpt + "/state.json", state.dump(2));
  try {
    load_inference_checkpoint(dir.path("run"));
    ADD_FAILURE() << "loaded a record whose fields disagree with its text";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(ckpt + "/state.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attention.rope_dims"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trex::train
