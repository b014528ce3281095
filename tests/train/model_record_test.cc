// A checkpoint records the model config it was trained with (model_record.h), on real files
// written by the trainer. One helper (checkpoint_model) decides the model for the shared loader
// of trex serve and trex generate (load_inference_checkpoint) and for a training resume: a model
// file changed since (rope_dims 16 -> 32, the same parameter shapes) is refused with an error
// naming the checkpoint, the field and both values when named for the load (--model-config, or
// --config beside --resume), and is a one-line warning with the recorded model loaded when it is
// reached through the recorded paths (no --model-config; --resume alone, which then continues bit
// for bit); a model file reached that way that is gone or no longer parses is a warning too, and
// the record is used. An unchanged config loads the recorded model and computes the same logits as the
// trained weights under the original config; a checkpoint written before the record existed
// still loads from the path, with a one-line warning. run.init_from refuses a recorded model that
// differs in a field that changes what the weights compute, and notes training-only changes.
#include "trex/train/model_record.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
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

// The model file changed after training (rope_dims 16 -> 32, the same shapes). Named by the
// train config's path (no --model-config): the recorded model loads, computing what the trained
// weights computed, with one warning naming the field and both values. Named by --model-config:
// refused, naming the checkpoint, the field and both values.
TEST(ModelRecord, ServeAndGenerateLoaderUsesTheRecordOverAChangedModelFile) {
  TempDir dir("record-changed");
  const std::string ckpt = train_checkpoint(dir);
  model::Transformer ref(model::load_model_config(dir.path("tiny.toml")), 0, false);
  ref.load(ckpt + "/model.safetensors");
  const std::vector<float> want = logits_of(ref);
  dir.write("tiny.toml", model_text(32));  // the model file changes after training
  std::string err = stderr_of(dir, [&] {
    InferenceCheckpoint a = load_inference_checkpoint(dir.path("run"));
    EXPECT_EQ(a.model->config().attention.rope_dims, 16);
    EXPECT_EQ(logits_of(*a.model), want);
  });
  EXPECT_EQ(err, "trex: warning: " + ckpt + ": " + dir.path("tiny.toml") + " (through " + dir.path("train.toml") +
                     ") now has attention.rope_dims = 32, the weights were trained with 16; using the model config "
                     "the checkpoint records\n");
  // Through --model-config.
  try {
    load_inference_checkpoint(dir.path("run"), dir.path("tiny.toml"));
    ADD_FAILURE() << "loaded a rope_dims 16 checkpoint with --model-config of rope_dims 32";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("--ckpt"), std::string::npos) << w;
    EXPECT_NE(w.find(ckpt), std::string::npos) << w;
    EXPECT_NE(w.find("--model-config " + dir.path("tiny.toml")), std::string::npos) << w;
    EXPECT_NE(w.find("attention.rope_dims = 16"), std::string::npos) << w;
    EXPECT_NE(w.find("has 32"), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << w;
  }
}

// The one helper's rules, on configs alone: the record wins; a path-named config that differs is
// a warning naming the first field and how many more differ, an explicit one an error; without
// a record the given config is used with a warning, and with neither it is an error.
TEST(ModelRecord, CheckpointModelRules) {
  TempDir dir("record-rules");
  dir.write("a.toml", model_text(16));
  std::string b_text = model_text(32);
  b_text.replace(b_text.find("norm_eps = 1e-6"), 15, "norm_eps = 1e-5");
  b_text.replace(b_text.find("swiglu_limit = 10"), 17, "swiglu_limit = 7");
  dir.write("b.toml", b_text);
  const model::ModelConfig a = model::load_model_config(dir.path("a.toml"));
  const model::ModelConfig b = model::load_model_config(dir.path("b.toml"));
  CheckpointModel m = checkpoint_model(a, b, "B", GivenModel::kByPath, "CK", "--ckpt");
  EXPECT_EQ(model_fields(m.model), model_fields(a));
  EXPECT_EQ(m.warning, "CK: B now has model.norm_eps = 1.0000000000000001e-05 (and 2 more fields), the weights were "
                       "trained with 9.9999999999999995e-07; using the model config the checkpoint records");
  m = checkpoint_model(a, a, "A", GivenModel::kByPath, "CK", "--ckpt");
  EXPECT_EQ(m.warning, "");
  m = checkpoint_model(a, std::nullopt, "", GivenModel::kByPath, "CK", "--ckpt");
  EXPECT_EQ(model_fields(m.model), model_fields(a));
  EXPECT_EQ(m.warning, "");
  try {
    checkpoint_model(a, b, "B", GivenModel::kExplicit, "CK", "--resume");
    ADD_FAILURE() << "an explicit config that differs was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--resume: CK was trained with model.norm_eps = ", 0), 0u) << e.what();
  }
  m = checkpoint_model(std::nullopt, b, "B", GivenModel::kExplicit, "CK", "--ckpt");
  EXPECT_EQ(model_fields(m.model), model_fields(b));
  EXPECT_EQ(m.warning, "CK records no model config (written before checkpoints did); using B as it is now, which "
                       "cannot be checked against the weights");
  EXPECT_THROW(checkpoint_model(std::nullopt, std::nullopt, "", GivenModel::kByPath, "CK", "--ckpt"), InputError);
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

// trex ARGS in a forked child, stdout and stderr into `log`; its exit code (-1 for a signal).
int trex_exit(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    if (!f) _exit(126);
    dup2(fileno(f), 1);
    dup2(fileno(f), 2);
    std::vector<char*> argv{const_cast<char*>(TREX_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    setenv("TREX_PROGRESS", "off", 1);
    execv(TREX_BINARY, argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& head) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    if (text.compare(pos, head.size(), head) == 0) out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

// `trex train --resume RUN` alone takes the train config from the checkpoint's recorded path; the
// model file it names changed since (rope_dims 16 -> 32). The run goes on with the recorded model,
// one warning naming the field and both values, and continues bit for bit as the run that never
// stopped; its next checkpoint records the model it trained. The same resume with an explicit
// --config is refused (exit 2), naming the checkpoint, the field and both values.
TEST(ModelRecord, CliResumeAloneContinuesTheRecordedModel) {
  TempDir dir("record-cli-resume");
  const std::string cfg = write_run_config(dir);
  const std::string hw = std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml";
  const std::vector<std::string> common = {"--steps", "4", "--threads", "2", "--hw", hw};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), common.begin(), common.end());
    return a;
  };
  ASSERT_EQ(trex_exit(with({"train", "--config", cfg, "--out", dir.path("full")}), dir.path("full.log")), 0)
      << read_file(dir.path("full.log"));
  ASSERT_EQ(trex_exit(with({"train", "--config", cfg, "--out", dir.path("run"), "--stop-after", "2"}),
                      dir.path("first.log")),
            0)
      << read_file(dir.path("first.log"));
  const std::string ckpt = resolve_checkpoint(dir.path("run"));
  dir.write("tiny.toml", model_text(32));

  EXPECT_EQ(trex_exit(with({"train", "--config", cfg, "--resume", dir.path("run")}), dir.path("explicit.log")), 2);
  std::string log = read_file(dir.path("explicit.log"));
  std::vector<std::string> errors = lines_starting(log, "trex: error: ");
  ASSERT_EQ(errors.size(), 1u) << log;
  EXPECT_EQ(errors[0], "trex: error: --resume: " + ckpt + " was trained with attention.rope_dims = 16, " +
                           dir.path("tiny.toml") + " (through " + cfg +
                           ") has 32 (its state.json records the model the weights were trained as)");
  EXPECT_FALSE(fs::exists(dir.path("run/checkpoints/step-00000004")));

  ASSERT_EQ(trex_exit(with({"train", "--resume", dir.path("run")}), dir.path("resume.log")), 0)
      << read_file(dir.path("resume.log"));
  log = read_file(dir.path("resume.log"));
  std::vector<std::string> warnings = lines_starting(log, "trex: warning: ");
  ASSERT_EQ(warnings.size(), 1u) << log;
  EXPECT_EQ(warnings[0], "trex: warning: " + ckpt + ": " + dir.path("tiny.toml") + " (through " + cfg +
                             ") now has attention.rope_dims = 32, the weights were trained with 16; using the model "
                             "config the checkpoint records");
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_TRUE(read_file(dir.path(std::string("run/checkpoints/step-00000004/") + f)) ==
                read_file(dir.path(std::string("full/checkpoints/step-00000004/") + f)))
        << f << " differs from the uninterrupted run's";
  const nlohmann::json state = read_checkpoint_state(dir.path("run/checkpoints/step-00000004"));
  EXPECT_EQ(state["model_config"]["text"].get<std::string>(), model_text(16));
  EXPECT_EQ(state["model_config"]["fields"]["attention.rope_dims"], "16");
}

// `trex train --resume` alone when the model file the recorded train config names is gone or no
// longer parses: the checkpoint's record is the model, so the run goes on bit for bit with one
// warning naming the file and why (the rule serve and generate share: checkpoint_model_by_path).
// A checkpoint without a record has nothing else to go on: one error line, exit 2, no step.
TEST(ModelRecord, CliResumeAloneWithoutItsModelFileContinuesTheRecordedModel) {
  TempDir dir("record-cli-resume-gone");
  const std::string cfg = write_run_config(dir);
  const std::string tiny = dir.path("tiny.toml");
  const std::string hw = std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml";
  const std::vector<std::string> common = {"--steps", "4", "--threads", "2", "--hw", hw};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), common.begin(), common.end());
    return a;
  };
  ASSERT_EQ(trex_exit(with({"train", "--config", cfg, "--out", dir.path("full")}), dir.path("full.log")), 0)
      << read_file(dir.path("full.log"));
  for (const char* run : {"gone", "broken"})
    ASSERT_EQ(trex_exit(with({"train", "--config", cfg, "--out", dir.path(run), "--stop-after", "2"}),
                        dir.path(std::string(run) + "-first.log")),
              0)
        << read_file(dir.path(std::string(run) + "-first.log"));
  // The same stopped run, as written before checkpoints recorded their model.
  fs::copy(dir.path("broken"), dir.path("old"), fs::copy_options::recursive);
  const std::string old_ckpt = resolve_checkpoint(dir.path("old"));
  nlohmann::json old_state = read_checkpoint_state(old_ckpt);
  old_state.erase("model_config");
  write_file_atomic(old_ckpt + "/state.json", old_state.dump(2));

  // What the model file's reader says of it now: the warning quotes it.
  auto read_error = [&] {
    try {
      model::load_model_config(tiny);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << tiny << " still reads";
    return std::string();
  };
  auto resumes_bit_for_bit = [&](const std::string& run) {
    const std::string ckpt = resolve_checkpoint(dir.path(run));
    const std::string why = read_error();
    const std::string log_file = dir.path(run + "-resume.log");
    ASSERT_EQ(trex_exit(with({"train", "--resume", dir.path(run)}), log_file), 0) << read_file(log_file);
    const std::string log = read_file(log_file);
    const std::vector<std::string> warnings = lines_starting(log, "trex: warning: ");
    ASSERT_EQ(warnings.size(), 1u) << log;
    EXPECT_EQ(warnings[0], "trex: warning: " + ckpt + ": cannot read " + tiny + " (through " + cfg +
                               ") to check the model against it (" + why +
                               "); using the model config the checkpoint records");
    for (const char* f : {"model.safetensors", "optimizer.safetensors"})
      EXPECT_TRUE(read_file(dir.path(run + "/checkpoints/step-00000004/" + f)) ==
                  read_file(dir.path(std::string("full/checkpoints/step-00000004/") + f)))
          << run << ": " << f << " differs from the uninterrupted run's";
    const nlohmann::json state = read_checkpoint_state(dir.path(run + "/checkpoints/step-00000004"));
    EXPECT_EQ(state["model_config"]["text"].get<std::string>(), model_text(16)) << run;
  };

  fs::remove(tiny);
  resumes_bit_for_bit("gone");
  dir.write("tiny.toml", "[model\nname = \"v4-record\"\n");  // no longer TOML
  resumes_bit_for_bit("broken");
  // trex serve and generate load the same way (the shared rule), as the weights were trained.
  {
    const std::string ckpt = resolve_checkpoint(dir.path("broken"));
    const std::string why = read_error();
    model::Transformer ref(model::parse_model_config(model_text(16), "tiny.toml"), 0, false);
    ref.load(dir.path("full/checkpoints/step-00000004/model.safetensors"));
    const std::string err = stderr_of(dir, [&] {
      InferenceCheckpoint a = load_inference_checkpoint(dir.path("broken"));
      EXPECT_EQ(logits_of(*a.model), logits_of(ref));
    });
    EXPECT_EQ(err, "trex: warning: " + ckpt + ": cannot read " + tiny + " (through " + cfg +
                       ") to check the model against it (" + why +
                       "); using the model config the checkpoint records\n");
  }

  const std::string why = read_error();
  EXPECT_EQ(trex_exit(with({"train", "--resume", dir.path("old")}), dir.path("old-resume.log")), 2);
  const std::string log = read_file(dir.path("old-resume.log"));
  const std::vector<std::string> errors = lines_starting(log, "trex: error: ");
  ASSERT_EQ(errors.size(), 1u) << log;
  EXPECT_EQ(errors[0], "trex: error: " + why) << log;
  EXPECT_FALSE(fs::exists(dir.path("old/checkpoints/step-00000004")));
}

// run.init_from (SFT after CPT): the starting checkpoint's recorded model must be the run's in
// every field that changes what the weights compute. rope_dims 16 -> 32 (the same shapes) is
// refused before any step, naming the config, the checkpoint, the field and both values; the
// training-only fields (bias_update_rate, init_std, train_seq_len) may change, with one note; a
// checkpoint written before the record starts the run with one warning.
TEST(ModelRecord, InitFromChecksTheRecordedModel) {
  TempDir dir("record-init");
  const std::string ckpt = train_checkpoint(dir);
  std::string train = read_file(dir.path("train.toml"));
  train.replace(train.find("model = \"tiny.toml\""), 19, "model = \"sft.toml\"\ninit_from = \"run\"");
  const std::string cfg = dir.write("init.toml", train);
  const std::string label = dir.path("sft.toml") + " (through " + cfg + ")";

  dir.write("sft.toml", model_text(32));
  TrainConfig c = load_train_config(cfg);
  try {
    run_training(c, quiet(dir.path("bad"), 2));
    ADD_FAILURE() << "started a rope_dims 32 run from rope_dims 16 weights";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), cfg + ": run.init_from: " + ckpt + " was trained with attention.rope_dims = 16, " +
                                         label + " has 32 (its weights would compute something else)");
  }
  EXPECT_FALSE(fs::exists(dir.path("bad/checkpoints")));

  // The same model but for training-only fields.
  std::string sft = model_text(16);
  sft.replace(sft.find("train_seq_len = 64"), 18, "train_seq_len = 32\ninit_std = 0.01");
  sft.replace(sft.find("score_function"), 0, "bias_update_rate = 0\n");
  dir.write("sft.toml", sft);
  c = load_train_config(cfg);
  std::string err = stderr_of(dir, [&] { EXPECT_EQ(run_training(c, quiet(dir.path("sft"), 2)).last_step, 2); });
  EXPECT_EQ(err, "trex: note: run.init_from " + ckpt +
                     ": this run changes training-only fields of its model: model.train_seq_len 64 -> 32, "
                     "model.init_std 0.02 -> 0.01, ffn.bias_update_rate 0.001 -> 0\n");

  // Unchanged: nothing to say.
  dir.write("sft.toml", model_text(16));
  c = load_train_config(cfg);
  err = stderr_of(dir, [&] { EXPECT_EQ(run_training(c, quiet(dir.path("same"), 2)).last_step, 2); });
  EXPECT_EQ(err, "");

  // Written before checkpoints recorded their model.
  nlohmann::json state = read_checkpoint_state(ckpt);
  state.erase("model_config");
  write_file_atomic(ckpt + "/state.json", state.dump(2));
  err = stderr_of(dir, [&] { EXPECT_EQ(run_training(c, quiet(dir.path("old"), 2)).last_step, 2); });
  EXPECT_EQ(err, "trex: warning: " + ckpt + " records no model config (written before checkpoints did); its weights "
                     "start " + label + ", which cannot be checked against them\n");
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
