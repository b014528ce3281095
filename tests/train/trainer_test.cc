// The trainer end to end on a tiny V4 model (vocab 512, d 64, 2 layers, seq 128): the loss
// falls over 20 steps without a NaN; the NaN guard skips an injected non-finite gradient and
// stops after nan_limit in a row; a run interrupted and resumed reproduces the uninterrupted
// run bit for bit (losses, weights, optimizer state), in-process and through the CLI with the
// first run SIGKILLed mid-way; the swap optimizer trains exactly like the in-memory AdamW; bf16
// activations train close to fp32 ones.
#include "trex/train/trainer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <linux/capability.h>
#include <thread>

#include "test_text.h"
#include "trex/train/checkpoint.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

using testing::TempDir;

// v4-nano shrunk to train in a fraction of a second per step.
constexpr const char* kTinyModel = R"(
[model]
name = "v4-tiny"
source = "trex tests"
vocab = 512
hidden = 64
layers = 2
mtp_depth = 0
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
)";

// A train config over the license texts and a small SFT file (read as text: CPT mode).
std::string write_config(const TempDir& dir, const std::string& extra_optimizer = "", const std::string& extra_run = "",
                         const std::string& guard = "") {
  dir.write("tiny.toml", kTinyModel);
  dir.write("sft.jsonl", testing::sft_jsonl(20));
  std::string cfg = "[run]\nmodel = \"tiny.toml\"\nseed = 3\nseq = 128\nrows = 2\nsteps = 20\nlog_every = 0\n" +
                    extra_run +
                    "\n[tokenizer]\nsample_bytes = 200000\n"
                    "\n[optimizer]\nlr = 1e-2\nmin_lr = 1e-3\nwarmup = 3\nweight_decay = 0.01\nclip_norm = 1.0\n" +
                    extra_optimizer + "\n[checkpoint]\nevery = 0\nkeep_last = 3\n" + guard +
                    "\n[[data]]\nkind = \"text\"\npath = \"" + testing::licenses_dir() +
                    "\"\nweight = 0.7\n\n[[data]]\nkind = \"sft\"\npath = \"sft.jsonl\"\nweight = 0.3\n";
  return dir.write("train.toml", cfg);
}

TrainOptions quiet(const std::string& out) {
  TrainOptions o;
  o.out_dir = out;
  o.progress = false;
  o.print = false;
  return o;
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return s / double(to - from);
}

TEST(TrainerTest, SmokeRunLossFallsWithoutNan) {
  TempDir dir("smoke");
  TrainConfig c = load_train_config(write_config(dir));
  TrainOptions o = quiet(dir.path("run"));
  o.trace_path = dir.path("trace.json");
  TrainResult r = run_training(c, o);
  ASSERT_EQ(r.losses.size(), 20u);
  for (size_t i = 0; i < r.losses.size(); ++i) {
    EXPECT_TRUE(std::isfinite(r.losses[i])) << "step " << i + 1;
    EXPECT_FALSE(r.skipped[i]);
  }
  // ln(512) = 6.24 at the start; 20 steps on repetitive text bring it well down.
  EXPECT_GT(r.losses[0], 5.0);
  EXPECT_LT(mean(r.losses, 15, 20), mean(r.losses, 0, 3) - 1.0);
  EXPECT_EQ(r.skipped_steps, 0);
  EXPECT_TRUE(std::filesystem::exists(dir.path("run/loss.svg")));
  EXPECT_TRUE(std::filesystem::exists(dir.path("run/checkpoints/step-00000020/model.safetensors")));
  std::string metrics = read_file(dir.path("run/metrics.jsonl"));
  EXPECT_EQ(std::count(metrics.begin(), metrics.end(), '\n'), 20);
  EXPECT_NE(metrics.find("\"grad_norm\""), std::string::npos);
  EXPECT_NE(metrics.find("\"tokens_per_s\""), std::string::npos);
  // The data and optimizer spans reached the category summary.
  EXPECT_GT(r.trace.seconds[int(core::TraceCategory::kData)], 0);
  EXPECT_GT(r.trace.seconds[int(core::TraceCategory::kOptimizer)], 0);
  // The Chrome trace has what Perfetto and HTA look for (issue 15): the rank, one
  // ProfilerStep#N per step, and the work the GEMMs counted into their spans.
  nlohmann::json trace = nlohmann::json::parse(read_file(dir.path("trace.json")));
  EXPECT_EQ(trace["distributedInfo"]["rank"], 0);
  int steps = 0, counted = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    steps += e["name"].get<std::string>().rfind("ProfilerStep#", 0) == 0;
    counted += e.contains("args") && e["cat"] == "gemm" && e["args"]["flops"].get<double>() > 0;
  }
  EXPECT_EQ(steps, 20);
  EXPECT_GT(counted, 0);
}

TEST(TrainerTest, Bf16ActivationsTrainCloseToFp32) {
  TempDir dir("bf16");
  TrainConfig fp32 = load_train_config(write_config(dir));
  TrainConfig bf16 = load_train_config(write_config(dir, "", "activations = \"bf16\"\n"));
  ASSERT_EQ(bf16.activations, "bf16");
  TrainOptions o = quiet(dir.path("fp32"));
  o.steps = 6;
  TrainResult a = run_training(fp32, o);
  o.out_dir = dir.path("bf16");
  TrainResult b = run_training(bf16, o);
  bool differs = false;
  for (size_t i = 0; i < a.losses.size(); ++i) {
    ASSERT_TRUE(std::isfinite(b.losses[i]));
    // bf16 activations carry 8 significant bits: the losses agree to a few hundredths.
    EXPECT_NEAR(a.losses[i], b.losses[i], 0.05) << "step " << i + 1;
    differs |= a.losses[i] != b.losses[i];
  }
  EXPECT_TRUE(differs) << "bf16 activations changed nothing";
}

TEST(TrainerTest, NanGuardSkipsAndStops) {
  TempDir dir("nan");
  TrainConfig c = load_train_config(write_config(dir, "", "", "\n[guard]\nnan_limit = 3\nnan_at_step = [4]\n"));
  TrainOptions o = quiet(dir.path("run"));
  o.steps = 6;
  TrainResult r = run_training(c, o);
  ASSERT_EQ(r.skipped.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(r.skipped[i], i == 3) << "step " << i + 1;
  EXPECT_EQ(r.skipped_steps, 1);
  EXPECT_NE(read_file(dir.path("run/metrics.jsonl")).find("\"skipped\":true"), std::string::npos);

  TempDir dir2("nanstop");
  c = load_train_config(write_config(dir2, "", "", "\n[guard]\nnan_limit = 3\nnan_at_step = [2, 3, 4, 5]\n"));
  o = quiet(dir2.path("run"));
  try {
    run_training(c, o);
    FAIL() << "expected TrainingStopped";
  } catch (const TrainingStopped& e) {
    EXPECT_NE(std::string(e.what()).find("stopped at step 4"), std::string::npos) << e.what();
  }
}

TEST(TrainerTest, ResumeIsBitExact) {
  TempDir dir("resume");
  TrainConfig c = load_train_config(write_config(dir));
  TrainOptions full = quiet(dir.path("full"));
  full.steps = 10;
  TrainResult a = run_training(c, full);

  TrainOptions first = quiet(dir.path("split"));
  first.steps = 10;
  first.stop_after = 6;
  TrainResult b1 = run_training(c, first);
  ASSERT_EQ(b1.last_step, 6);
  TrainOptions second = quiet(dir.path("split"));
  second.steps = 10;
  second.resume = dir.path("split");
  TrainResult b2 = run_training(c, second);
  ASSERT_EQ(b2.first_step, 7);
  ASSERT_EQ(b2.last_step, 10);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(a.losses[i], b1.losses[i]) << "step " << i + 1;
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(a.losses[6 + i], b2.losses[i]) << "step " << i + 7;
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(read_file(dir.path(std::string("full/checkpoints/step-00000010/") + f)),
              read_file(dir.path(std::string("split/checkpoints/step-00000010/") + f)))
        << f << " differs";
  // The resumed run's metrics continue the file: steps 1..10 once each.
  std::string m = read_file(dir.path("split/metrics.jsonl"));
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 10);
}

// A checkpoint written with one run.packing is not resumed with the other: the same data
// position fills rows differently.
TEST(TrainerTest, ResumeRefusesAnotherPacking) {
  TempDir dir("resumepacking");
  TrainConfig cut = load_train_config(write_config(dir));
  TrainOptions first = quiet(dir.path("run"));
  first.steps = 4;
  first.stop_after = 2;
  run_training(cut, first);
  TrainConfig whole = load_train_config(write_config(dir, "", "packing = \"whole\"\n"));
  TrainOptions second = quiet(dir.path("run"));
  second.steps = 4;
  second.resume = dir.path("run");
  try {
    run_training(whole, second);
    ADD_FAILURE() << "resumed a cut checkpoint with whole packing";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("run.packing = \"cut\""), std::string::npos) << e.what();
  }
}

TEST(TrainerTest, SwapOptimizerTrainsLikeAdamW) {
  TempDir dir("swap");
  // Two micro-batches per step, so the accumulation path runs too.
  TrainConfig adamw = load_train_config(write_config(dir, "", "micro_batches = 2\n"));
  TrainOptions o = quiet(dir.path("adamw"));
  o.steps = 6;
  TrainResult a = run_training(adamw, o);
  // Chunks far smaller than the model, so the step really streams through the file.
  TrainConfig swap = load_train_config(write_config(dir, "kind = \"swap\"\nswap_chunk = 4096\n", "micro_batches = 2\n"));
  o.out_dir = dir.path("swap");
  TrainResult s = run_training(swap, o);
  ASSERT_EQ(a.losses.size(), s.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_EQ(a.losses[i], s.losses[i]) << "step " << i + 1;
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(read_file(dir.path(std::string("adamw/checkpoints/step-00000006/") + f)),
              read_file(dir.path(std::string("swap/checkpoints/step-00000006/") + f)))
        << f << " differs";
}

// The per-step metrics lines of a run.
std::vector<nlohmann::json> metrics_of(const std::string& run) {
  std::vector<nlohmann::json> v;
  std::string text = read_file(run + "/metrics.jsonl");
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    v.push_back(nlohmann::json::parse(text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return v;
}

// The swap update overlapped with the backward (the default in one process) against the
// in-memory AdamW, byte for byte, on the paths a step can take: every step clipped with the
// current norm (the overlapped update is redone after the backward), none clipped (it stands),
// clipping with the previous step's norm (it stands, scaled; the first step, with no previous
// norm, clips with its own and is redone), a non-finite gradient (it is
// discarded), and a run stopped and resumed. Weight decay groups, bf16 weights and two
// micro-batches throughout.
TEST(TrainerTest, OverlappedSwapUpdateEqualsAdamW) {
  TempDir dir("overlap");
  struct Case {
    const char* name;
    std::string clip;      // replaces "clip_norm = 1.0"
    std::string guard;
    int redone;            // steps whose overlapped update must have been redone
    bool some_clipped;
  };
  const std::vector<Case> cases = {
      {"clip_every_step", "clip_norm = 1e-4", "", 4, true},
      {"no_clip", "clip_norm = 0", "", 0, false},
      // The first step has no previous norm: it clips with its own (redone); the rest stand.
      {"clip_previous", "clip_norm = 0.05\nclip_with = \"previous\"", "", 1, true},
      {"nan_step", "clip_norm = 0", "\n[guard]\nnan_at_step = [2]\nnan_limit = 3\n", 0, false},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    auto config = [&](const std::string& kind) {
      std::string text = read_file(write_config(dir, kind, "micro_batches = 2\n", k.guard));
      text.replace(text.find("clip_norm = 1.0"), 15, k.clip);
      return load_train_config(dir.write("train.toml", text));
    };
    TrainOptions o = quiet(dir.path(std::string(k.name) + "_adamw"));
    o.steps = 4;
    TrainResult a = run_training(config(""), o);
    o.out_dir = dir.path(std::string(k.name) + "_swap");
    TrainResult s = run_training(config("kind = \"swap\"\nswap_chunk = 4096\n"), o);
    ASSERT_EQ(a.losses.size(), s.losses.size());
    for (size_t i = 0; i < a.losses.size(); ++i) {
      if (std::isnan(a.losses[i])) continue;  // the skipped step
      EXPECT_EQ(a.losses[i], s.losses[i]) << "step " << i + 1;
    }
    EXPECT_EQ(a.skipped, s.skipped);
    for (const char* f : {"model.safetensors", "optimizer.safetensors"})
      EXPECT_EQ(read_file(o.out_dir + "/checkpoints/step-00000004/" + f),
                read_file(dir.path(std::string(k.name) + "_adamw/checkpoints/step-00000004/") + f))
          << f << " differs";
    EXPECT_EQ(s.swap_redone_steps, k.redone);
    int clipped = 0;
    for (const nlohmann::json& j : metrics_of(o.out_dir)) {
      clipped += j["clipped"].get<bool>();
      EXPECT_TRUE(j.contains("swap_io_s"));
      EXPECT_GE(j["swap_hidden_s"].get<double>(), 0.0);
      // Resident optimizer state: the K = 3 slots of 12 B x 4096 elements, nothing else (the
      // scaled gradient of a clipped overlapped step is a fixed 64 KiB block, not state).
      EXPECT_EQ(j["optimizer_bytes"].get<int64_t>(), 3 * 12 * 4096) << "step " << j["step"];
    }
    EXPECT_EQ(clipped > 0, k.some_clipped);
  }
  // Stopped after step 2 and resumed (the previous norm travels in the checkpoint).
  std::string text = read_file(write_config(dir, "kind = \"swap\"\nswap_chunk = 4096\n", "micro_batches = 2\n"));
  text.replace(text.find("clip_norm = 1.0"), 15, "clip_norm = 0.05\nclip_with = \"previous\"");
  TrainConfig split = load_train_config(dir.write("train.toml", text));
  split.checkpoint_every = 2;
  TrainOptions o = quiet(dir.path("split"));
  o.steps = 4;
  o.stop_after = 2;
  run_training(split, o);
  o.stop_after = 0;
  o.resume = dir.path("split");
  run_training(split, o);
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(read_file(dir.path(std::string("split/checkpoints/step-00000004/") + f)),
              read_file(dir.path(std::string("clip_previous_adamw/checkpoints/step-00000004/") + f)))
        << f << " differs after resume";
}

// Runs `trex train ...`; returns the pid (the caller waits or kills). in_child runs in the child
// before the exec (a limit or a dropped capability that trex should meet as a user would).
pid_t spawn_trex(const std::vector<std::string>& args, const std::string& log,
                 const std::function<void()>& in_child = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    if (in_child) in_child();
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(TREX_BINARY));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    setenv("TREX_PROGRESS", "off", 1);
    execv(TREX_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Makes a config from write_config publish a checkpoint every `every` steps and keep them all.
void checkpoint_every(const std::string& cfg, int every) {
  std::string text = read_file(cfg);
  const std::string from = "[checkpoint]\nevery = 0\nkeep_last = 3";
  const std::string to = "[checkpoint]\nevery = " + std::to_string(every) + "\nkeep_last = 99";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), to);
  write_file_atomic(cfg, text);
}

// The "loss" fields of a run's metrics.jsonl, as written.
std::vector<std::string> metric_losses(const std::string& path) {
  std::vector<std::string> out;
  std::string m = read_file(path);
  size_t p = 0;
  while ((p = m.find("\"loss\":", p)) != std::string::npos) {
    size_t e = m.find(',', p);
    out.push_back(m.substr(p, e - p));
    p = e;
  }
  return out;
}

TEST(TrainerTest, CliRunKilledMidwayResumesBitForBit) {
  TempDir dir("kill");
  std::string cfg = write_config(dir);
  // Checkpoints every 4 steps so the kill finds one to resume from.
  checkpoint_every(cfg, 4);
  const std::string hw = std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml";
  const std::vector<std::string> common = {"train", "--config", cfg, "--steps", "60", "--threads", "2", "--hw", hw};

  std::vector<std::string> full = common;
  full.insert(full.end(), {"--out", dir.path("full")});
  ASSERT_EQ(wait_exit(spawn_trex(full, dir.path("full.log"))), 0) << read_file(dir.path("full.log"));

  std::vector<std::string> killed = common;
  killed.insert(killed.end(), {"--out", dir.path("killed")});
  pid_t pid = spawn_trex(killed, dir.path("killed.log"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  // Killed as soon as its first checkpoint (step 4) is published, mid-way through 60 steps.
  while (!std::filesystem::exists(dir.path("killed/checkpoints/step-00000004/state.json")) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed: " << read_file(dir.path("killed.log"));
  ASSERT_FALSE(std::filesystem::exists(dir.path("killed/checkpoints/step-00000060")));

  std::vector<std::string> resume = {"train", "--resume", dir.path("killed"), "--steps", "60", "--threads", "2",
                                     "--hw", hw};
  ASSERT_EQ(wait_exit(spawn_trex(resume, dir.path("resume.log"))), 0) << read_file(dir.path("resume.log"));
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(read_file(dir.path(std::string("full/checkpoints/step-00000060/") + f)),
              read_file(dir.path(std::string("killed/checkpoints/step-00000060/") + f)))
        << f << " differs";
  // Same per-step losses in the metrics of both runs.
  EXPECT_EQ(metric_losses(dir.path("full/metrics.jsonl")), metric_losses(dir.path("killed/metrics.jsonl")));
}

// Bad swap input through the CLI: a swap directory that does not exist, a memory limit too small
// for the K slots, and a resume from an optimizer state file that is not one: one "trex: error:" line naming the file, exit 2.
TEST(TrainerTest, SwapBadInputIsOneLineAndExitTwo) {
  TempDir dir("swapbad");
  std::string text = read_file(write_config(dir, "kind = \"swap\"\nswap_dir = \"no/such/dir\"\n"));
  std::string cfg = dir.write("train.toml", text);
  const std::string hw = std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml";  // no probe
  std::string log = dir.path("missing.log");
  EXPECT_EQ(wait_exit(spawn_trex({"train", "--config", cfg, "--out", dir.path("run"), "--steps", "2", "--hw", hw}, log)),
            2);
  std::string out = read_file(log);
  EXPECT_NE(out.find("trex: error: "), std::string::npos) << out;
  EXPECT_NE(out.find("no/such/dir"), std::string::npos) << out;

  // A memory limit that cannot hold the K slots: refused before anything is written.
  cfg = write_config(dir, "kind = \"swap\"\nswap_chunk = 4096\nswap_memory_mb = 0.1\n");
  log = dir.path("budget.log");
  EXPECT_EQ(wait_exit(spawn_trex({"train", "--config", cfg, "--out", dir.path("budget"), "--steps", "2", "--hw", hw}, log)),
            2);
  out = read_file(log);
  EXPECT_NE(out.find("trex: error: "), std::string::npos) << out;
  EXPECT_NE(out.find("optimizer.swap_memory_mb: 0.1 MB cannot hold swap_slots = 3 chunks of swap_chunk = 4096"),
            std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.path("budget"))) << "the run folder was made";

  // A good run, then its optimizer state replaced by garbage.
  cfg = write_config(dir, "kind = \"swap\"\nswap_chunk = 4096\n");
  ASSERT_EQ(wait_exit(spawn_trex({"train", "--config", cfg, "--out", dir.path("good"), "--steps", "2", "--hw", hw},
                                 dir.path("good.log"))),
            0)
      << read_file(dir.path("good.log"));
  // O_DIRECT by default (swap_direct not set): the swap line says so, or why the filesystem refused it.
  out = read_file(dir.path("good.log"));
  EXPECT_TRUE(out.find(" O_DIRECT, ") != std::string::npos ||
              out.find("fallback: O_DIRECT refused by the filesystem") != std::string::npos)
      << out;
  std::string state = dir.path("good/checkpoints/step-00000002/optimizer.safetensors");
  write_file_atomic(state, "not a safetensors file");
  log = dir.path("bad_state.log");
  EXPECT_EQ(wait_exit(spawn_trex({"train", "--config", cfg, "--out", dir.path("good"), "--steps", "4", "--hw", hw,
                                  "--resume", dir.path("good")},
                                 log)),
            2);
  out = read_file(log);
  EXPECT_NE(out.find("trex: error: "), std::string::npos) << out;
  EXPECT_NE(out.find("optimizer.safetensors"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

// The lines of a log that carry "error" (trex prints other lines, such as the swap line, first).
std::vector<std::string> error_lines(const std::string& log) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p < log.size()) {
    size_t e = log.find('\n', p);
    if (e == std::string::npos) e = log.size();
    std::string line = log.substr(p, e - p);
    if (line.find("error") != std::string::npos) out.push_back(line);
    p = e + 1;
  }
  return out;
}

// An I/O error in the middle of a run, from the kernel: once the run has published its step-2
// checkpoint, its file size limit (RLIMIT_FSIZE, lowered from outside with prlimit, as an
// operator's `prlimit --fsize` would) is set to the middle of the swap file's second copy. A
// step writes the whole copy it does not read, so within two steps a write-back there fails
// with EFBIG, while every checkpoint file still fits under the limit. The run must stop with one
// line naming the swap file and the offset, leave no swap file and no partial checkpoint, and
// resume from its last checkpoint to the same weights, state and losses as a run never stopped.
TEST(TrainerTest, SwapIoErrorMidRunStopsCleanlyAndResumesBitForBit) {
  TempDir dir("swapio");
  std::string cfg = write_config(dir, "kind = \"swap\"\nswap_chunk = 4096\n");
  checkpoint_every(cfg, 2);
  const std::string hw = std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml";
  const std::vector<std::string> common = {"train", "--config", cfg, "--steps", "40", "--threads", "2", "--hw", hw};
  std::vector<std::string> full = common;
  full.insert(full.end(), {"--out", dir.path("full")});
  ASSERT_EQ(wait_exit(spawn_trex(full, dir.path("full.log"))), 0) << read_file(dir.path("full.log"));

  std::vector<std::string> failing = common;
  failing.insert(failing.end(), {"--out", dir.path("failing")});
  pid_t pid = spawn_trex(failing, dir.path("failing.log"));
  const std::string first_ckpt = dir.path("failing/checkpoints/step-00000002");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);  // a hang guard only
  while (!std::filesystem::exists(first_ckpt + "/state.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const std::string swap_file = dir.path("failing/optimizer-" + std::to_string(pid) + ".swap");
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(swap_file, ec);
  if (ec) kill(pid, SIGKILL);
  ASSERT_FALSE(ec) << swap_file << ": " << ec.message() << "\n" << read_file(dir.path("failing.log"));
  // Two copies of 12 B x (chunks of 4096 elements); the limit is a chunk boundary half-way
  // into the second copy, so a write-back there fails whole.
  const uint64_t chunk_bytes = 12 * 4096, copy_bytes = file_bytes / 2;
  const uint64_t limit = copy_bytes + copy_bytes / 2 / chunk_bytes * chunk_bytes;
  ASSERT_GT(limit, std::filesystem::file_size(first_ckpt + "/optimizer.safetensors"))
      << "a checkpoint would meet the limit before the swap file does";
  ASSERT_LT(limit, file_bytes);
  rlimit old{};
  ASSERT_EQ(prlimit(pid, RLIMIT_FSIZE, nullptr, &old), 0) << std::strerror(errno);
  rlimit lowered{rlim_t(limit), old.rlim_max};
  ASSERT_EQ(prlimit(pid, RLIMIT_FSIZE, &lowered, nullptr), 0) << std::strerror(errno);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string out = read_file(dir.path("failing.log"));
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status) << " (SIGXFSZ not ignored?)\n" << out;
  ASSERT_NE(WEXITSTATUS(status), 0) << "the run finished before its limit was lowered:\n" << out;
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  std::vector<std::string> errors = error_lines(out);
  ASSERT_EQ(errors.size(), 1u) << out;
  const std::string head = "trex: error: " + swap_file + ": swap write failed at offset ";
  ASSERT_EQ(errors[0].rfind(head, 0), 0u) << out;
  EXPECT_GE(std::stoull(errors[0].substr(head.size())), limit) << out;
  EXPECT_NE(errors[0].find(": File too large"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.size() - errors[0].size() - 1), errors[0] + "\n") << "the error is not the last line";

  // Nothing half-written: the swap file is gone, only published checkpoints remain.
  EXPECT_FALSE(std::filesystem::exists(swap_file));
  int64_t last = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path("failing/checkpoints"))) {
    const std::string name = e.path().filename().string();
    ASSERT_EQ(name.rfind("step-", 0), 0u) << "left behind: " << name;
    last = std::max<int64_t>(last, std::stoll(name.substr(5)));
  }
  EXPECT_GE(last, 2);
  EXPECT_LT(last, 40);

  std::vector<std::string> resume = {"train", "--resume", dir.path("failing"), "--steps", "40", "--threads", "2",
                                     "--hw", hw};
  ASSERT_EQ(wait_exit(spawn_trex(resume, dir.path("resume.log"))), 0) << read_file(dir.path("resume.log"));
  for (const char* f : {"model.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(read_file(dir.path(std::string("full/checkpoints/step-00000040/") + f)),
              read_file(dir.path(std::string("failing/checkpoints/step-00000040/") + f)))
        << f << " differs after resuming from step " << last;
  EXPECT_EQ(metric_losses(dir.path("full/metrics.jsonl")), metric_losses(dir.path("failing/metrics.jsonl")));
}

// Makes the calling process meet file permissions as any user does: root keeps
// CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH across exec only through its bounding set, so they go
// from there. Exits 125 with a line on stderr when it cannot (root without CAP_SETPCAP).
void drop_permission_override_in_child() {
  if (geteuid() != 0) return;
  if (prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0 ||
      prctl(PR_CAPBSET_DROP, CAP_DAC_READ_SEARCH, 0, 0, 0) != 0) {
    std::fprintf(stderr, "cannot drop CAP_DAC_OVERRIDE: %s\n", std::strerror(errno));
    _exit(125);
  }
}

// The swap file refused at start-up, by the kernel: a read-only swap directory (mode 0555, met
// without root's override), and a disk too small for the reservation (a file size limit the
// child sets before the exec; posix_fallocate fails as on a full disk, with EFBIG instead of
// ENOSPC). Each: one "trex: error:" line naming the swap file and the reason, no swap file and
// no checkpoint left. The directory is the user's input (exit 2); the reservation is a write the
// system refused (an IoError, exit 1, as a refused write mid-run).
TEST(TrainerTest, SwapFileRefusedAtStartIsOneLineAndLeavesNothing) {
  TempDir dir("swapstart");
  const std::string hw = std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml";
  std::string cfg = write_config(dir, "kind = \"swap\"\nswap_chunk = 4096\nswap_dir = \"ro\"\n");
  std::filesystem::create_directories(dir.path("ro"));
  std::filesystem::permissions(dir.path("ro"), std::filesystem::perms(0555));
  std::string log = dir.path("ro.log");
  pid_t pid = spawn_trex({"train", "--config", cfg, "--out", dir.path("ro_run"), "--steps", "2", "--hw", hw}, log,
                         drop_permission_override_in_child);
  int code = wait_exit(pid);
  std::string out = read_file(log);
  std::filesystem::permissions(dir.path("ro"), std::filesystem::perms(0755));
  if (code == 125) GTEST_SKIP() << "root here cannot give up its permission override: " << out;
  EXPECT_EQ(code, 2) << out;
  std::vector<std::string> errors = error_lines(out);
  ASSERT_EQ(errors.size(), 1u) << out;
  EXPECT_EQ(errors[0], "trex: error: " + dir.path("ro/optimizer-" + std::to_string(pid) + ".swap") +
                           ": cannot create the swap file: Permission denied");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path("ro")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("ro_run/checkpoints")));

  // The tiny model's swap file is 24 B x 56 chunks of 4096 elements (5.5 MB); what the run
  // writes before it (the tokenizer) is well under the 1 MiB limit.
  cfg = write_config(dir, "kind = \"swap\"\nswap_chunk = 4096\n");
  log = dir.path("full.log");
  pid = spawn_trex({"train", "--config", cfg, "--out", dir.path("full_run"), "--steps", "2", "--hw", hw}, log, [] {
    rlimit lim{rlim_t(1) << 20, rlim_t(1) << 20};
    setrlimit(RLIMIT_FSIZE, &lim);
  });
  code = wait_exit(pid);
  out = read_file(log);
  EXPECT_EQ(code, 1) << out;
  errors = error_lines(out);
  ASSERT_EQ(errors.size(), 1u) << out;
  const std::string head = "trex: error: " + dir.path("full_run/optimizer-" + std::to_string(pid) + ".swap") +
                           ": cannot reserve ";
  EXPECT_EQ(errors[0].rfind(head, 0), 0u) << out;
  EXPECT_NE(errors[0].find(" bytes for the swap file: File too large"), std::string::npos) << out;
  for (const auto& e : std::filesystem::directory_iterator(dir.path("full_run")))
    EXPECT_EQ(e.path().filename().string().find(".swap"), std::string::npos) << "left behind: " << e.path();
  EXPECT_FALSE(std::filesystem::exists(dir.path("full_run/checkpoints")));
}

// A checkpoint that does not fit (a file size limit the child sets before the exec, between
// the sizes of the model's and the optimizer's files, so the optimizer state of the first
// checkpoint is cut by EFBIG as by a full disk): one line naming the file, exit 1 (a refused
// write, util/io_error.h, as for the swap file), and no partial checkpoint directory left.
TEST(TrainerTest, CheckpointThatDoesNotFitLeavesNoPartialDirectory) {
  TempDir dir("ckptfull");
  const std::string hw = std::string(TREX_SOURCE_DIR) + "/configs/hw/a100.toml";
  std::string cfg = write_config(dir);
  ASSERT_EQ(wait_exit(spawn_trex({"train", "--config", cfg, "--out", dir.path("sizes"), "--steps", "1", "--hw", hw},
                                 dir.path("sizes.log"))),
            0)
      << read_file(dir.path("sizes.log"));
  const uint64_t model_bytes = std::filesystem::file_size(dir.path("sizes/checkpoints/step-00000001/model.safetensors"));
  const uint64_t opt_bytes = std::filesystem::file_size(dir.path("sizes/checkpoints/step-00000001/optimizer.safetensors"));
  ASSERT_LT(model_bytes, opt_bytes);
  const rlim_t limit = rlim_t((model_bytes + opt_bytes) / 2);
  const std::string log = dir.path("cut.log");
  int code = wait_exit(spawn_trex({"train", "--config", cfg, "--out", dir.path("cut"), "--steps", "1", "--hw", hw}, log,
                                  [limit] {
                                    rlimit lim{limit, limit};
                                    setrlimit(RLIMIT_FSIZE, &lim);
                                  }));
  std::string out = read_file(log);
  EXPECT_EQ(code, 1) << out;
  std::vector<std::string> errors = error_lines(out);
  ASSERT_EQ(errors.size(), 1u) << out;
  EXPECT_EQ(errors[0].rfind("trex: error: " + dir.path("cut/checkpoints/"), 0), 0u) << out;
  EXPECT_NE(errors[0].find("/optimizer.safetensors: "), std::string::npos) << out;
  EXPECT_NE(errors[0].find("File too large"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path("cut/checkpoints"))) << "a partial checkpoint was left";
}

}  // namespace
}  // namespace trex::train
