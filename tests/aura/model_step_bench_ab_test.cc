// bench/model_step_bench --tuning-ab (session 18): tuned against untuned in one process. A small
// real run alternates the arms pair by pair in the documented order, reports both arms and the
// per-pair ratios, and trains exactly as the plain run does (the tuning here keeps the bits, so
// the losses match step for step). That the file reaches the kernels in the tuned arm only is
// checked three ways: the kernels' lookup logs the file's entry (TREX_TUNING_LOG), the bench
// reports the lookup's active tuning per step, and a file that changes GEMM's bits changes the
// loss of the tuned steps and not of the untuned one. Bad input (a corrupt or missing tuning
// file, an empty path, --trace beside it, an odd --steps, no warm-up) is one line and exit 2,
// with nothing on stdout. A two-layer config written here keeps the runs to about a second of CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

#ifdef TREX_MODEL_STEP_BENCH
const std::string kBench = TREX_MODEL_STEP_BENCH;
#else
const std::string kBench;
#endif

std::filesystem::path dir_path() {
  return std::filesystem::temp_directory_path() / ("trex_step_ab_" + std::to_string(::getpid()));
}

std::string dir() {
  std::filesystem::create_directories(dir_path());
  return dir_path().string();
}

// Removes the test's temp folder when a test ends, however it ends.
struct TempDirGuard {
  ~TempDirGuard() {
    std::error_code ec;
    std::filesystem::remove_all(dir_path(), ec);
  }
};

std::string write(const std::string& name, const std::string& text) {
  const std::string p = dir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

// configs/model/v4-nano.toml cut to two layers (a sliding-window and a CSA layer) and a 1024-token
// vocabulary: every kernel the tuning below names still runs, at about a third of the CPU.
const char* kSmallConfig = R"([model]
name = "v4-nano-2l"
vocab = 1024
hidden = 256
layers = 2
mtp_depth = 0
tie_embeddings = false
norm = "rmsnorm"
norm_eps = 1e-6
train_seq_len = 256

[attention]
kind = "v4"
heads = 4
kv_heads = 1
head_dim = 64
rope_dims = 16
q_lora_rank = 128
window = 32
o_groups = 2
o_lora_rank = 64
rope_theta = 10000
compress_rope_theta = 10000
compress_ratios = [0, 4]

[indexer]
heads = 4
head_dim = 32
top_k = 16
loss_weight = 1.0

[mhc]
streams = 4
sinkhorn_iters = 20
eps = 1e-6

[ffn]
activation = "swiglu"
swiglu_limit = 10
routed_experts = 8
shared_experts = 1
top_k = 2
expert_hidden = 192
hash_layers = 1
routed_scaling_factor = 1.0
score_function = "sqrtsoftplus"
bias_update_rate = 1e-3
hash_seed = 0
)";

ProcessResult bench(const std::vector<std::string>& args, const std::string& env = "TREX_TUNING_LOG=0") {
  const std::string config = write("v4-nano-2l.toml", kSmallConfig);
  std::vector<std::string> argv = {"env", "TREX_THREADS=2", env, kBench, config};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 120;
  return run_process(argv, o);
}

void expect_one_line_error(const ProcessResult& p, const std::string& needle) {
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  EXPECT_TRUE(p.out.empty()) << p.out;
  EXPECT_NE(p.err.find("model_step_bench: " + needle), std::string::npos) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
}

// Entries that only move work between threads and keep the bits (docs/aura.md, "Correctness under
// any legal configuration"), so a tuned step computes what an untuned one does.
const char* kTuning = R"([hardware]
name = "test"
features = "avx512"

[[kernel]]
name = "sparse_attention.fwd"
shape = "*"
query_block = 16

[[kernel]]
name = "cross_entropy"
shape = "*"
block_elems = 262144

[[kernel]]
name = "swiglu.fwd"
shape = "*"
block_elems = 4096
)";

TEST(ModelStepBenchAb, AlternatesTheArmsAndTrainsAsThePlainRun) {
  if (kBench.empty()) GTEST_SKIP() << "model_step_bench not built (TREX_BUILD_BENCH off)";
  TempDirGuard cleanup;
  const std::string tuning = write("tuning.toml", kTuning);
  ProcessResult ab = bench({"--seq", "256", "--steps", "2", "--warmup", "1", "--tuning-ab", tuning}, "TREX_TUNING_LOG=1");
  ASSERT_EQ(ab.exit_code, 0) << ab.err;
  const nlohmann::json j = nlohmann::json::parse(ab.out);
  // Pair 0 untuned then tuned, pair 1 tuned then untuned.
  const std::vector<bool> order{false, true, true, false};
  EXPECT_EQ(j.at("tuned_steps").get<std::vector<bool>>(), order);
  // What the kernels' lookup saw: the file in the tuned steps only.
  EXPECT_EQ(j.at("active_tuning_steps").get<std::vector<bool>>(), order);
  // The lookup logs only while a tuning is active, with the entry it found.
  EXPECT_NE(ab.err.find("trex tuning: sparse_attention.fwd "), std::string::npos) << ab.err;
  EXPECT_NE(ab.err.find(": query_block=16\n"), std::string::npos) << ab.err;
  const auto un = j.at("untuned_step_s").get<std::vector<double>>(), tu = j.at("tuned_step_s").get<std::vector<double>>();
  const auto steps = j.at("step_times_s").get<std::vector<double>>();
  ASSERT_EQ(un.size(), 2u);
  ASSERT_EQ(tu.size(), 2u);
  EXPECT_EQ(un, (std::vector<double>{steps[0], steps[3]}));
  EXPECT_EQ(tu, (std::vector<double>{steps[1], steps[2]}));
  const auto ratios = j.at("pair_ratios").get<std::vector<double>>();
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_DOUBLE_EQ(ratios[0], un[0] / tu[0]);
  EXPECT_DOUBLE_EQ(ratios[1], un[1] / tu[1]);
  EXPECT_DOUBLE_EQ(j.at("median_pair_ratio").get<double>(), 0.5 * (ratios[0] + ratios[1]));
  EXPECT_EQ(j.at("tuned_faster_pairs").get<long>(), long(tu[0] < un[0]) + long(tu[1] < un[1]));
  const auto fb = j.at("forward_backward_s").get<std::vector<double>>();
  const auto un_fb = j.at("untuned_forward_backward_s").get<std::vector<double>>();
  const auto tu_fb = j.at("tuned_forward_backward_s").get<std::vector<double>>();
  EXPECT_EQ(un_fb, (std::vector<double>{fb[0], fb[3]}));
  EXPECT_EQ(tu_fb, (std::vector<double>{fb[1], fb[2]}));
  const auto fb_ratios = j.at("forward_backward_pair_ratios").get<std::vector<double>>();
  ASSERT_EQ(fb_ratios.size(), 2u);
  EXPECT_DOUBLE_EQ(fb_ratios[0], un_fb[0] / tu_fb[0]);
  EXPECT_DOUBLE_EQ(fb_ratios[1], un_fb[1] / tu_fb[1]);
  EXPECT_DOUBLE_EQ(j.at("median_forward_backward_pair_ratio").get<double>(), 0.5 * (fb_ratios[0] + fb_ratios[1]));
  EXPECT_EQ(j.at("untuned_forward_backward_cpu_s").size(), 2u);
  EXPECT_EQ(j.at("tuned_forward_backward_cpu_s").size(), 2u);
  EXPECT_EQ(j.at("tuning_ab").get<std::string>(), tuning);

  // The same six steps (two warm-up, four timed) without the tuning: the same losses, bit for bit.
  ProcessResult plain = bench({"--seq", "256", "--steps", "6", "--warmup", "0"}, "TREX_TUNING_LOG=1");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("trex tuning:"), std::string::npos) << plain.err;
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(p.contains("tuning_ab"));
  EXPECT_EQ(j.at("losses").get<std::vector<double>>(), p.at("losses").get<std::vector<double>>());

  // A file that changes the bits (GEMM's depth blocking moves the summation order): the warm-up's
  // untuned step computes the plain run's loss and its tuned step does not. A --tuning-ab that
  // never applied the file, or applied it in both arms, fails one of the two.
  const std::string kc16 = write("kc16.toml", "[[kernel]]\nname = \"gemm\"\nshape = \"*\"\nkc = 16\n");
  ProcessResult bits = bench({"--seq", "256", "--steps", "2", "--warmup", "1", "--tuning-ab", kc16});
  ASSERT_EQ(bits.exit_code, 0) << bits.err;
  const auto bl = nlohmann::json::parse(bits.out).at("losses").get<std::vector<double>>();
  const auto pl = p.at("losses").get<std::vector<double>>();
  ASSERT_GE(bl.size(), 2u);
  EXPECT_EQ(bl[0], pl[0]);
  EXPECT_NE(bl[1], pl[1]);
}

TEST(ModelStepBenchAb, BadInputIsOneLineAndExit2) {
  if (kBench.empty()) GTEST_SKIP() << "model_step_bench not built (TREX_BUILD_BENCH off)";
  TempDirGuard cleanup;
  const std::string corrupt = write("corrupt.toml", "[hardware\nname = 1\n");
  expect_one_line_error(bench({"--steps", "2", "--tuning-ab", corrupt}), corrupt + ":1:");
  const std::string missing = dir() + "/missing.toml";
  expect_one_line_error(bench({"--steps", "2", "--tuning-ab", missing}), missing);
  const std::string unknown = write("unknown.toml", "[[kernel]]\nname = \"gemm\"\nshape = \"*\"\nbogus = 3\n");
  expect_one_line_error(bench({"--steps", "2", "--tuning-ab", unknown}), unknown + ":");
  const std::string trace = dir() + "/trace.json";
  expect_one_line_error(bench({"--steps", "2", "--trace", trace, "--tuning-ab", unknown}), "--tuning-ab: not with --trace");
  EXPECT_FALSE(std::filesystem::exists(trace));
  // An empty path is an error, not "no trace" / "no A/B".
  expect_one_line_error(bench({"--steps", "1", "--tuning-ab", ""}), "--tuning-ab: empty path");
  expect_one_line_error(bench({"--steps", "1", "--trace", ""}), "--trace: empty path");
  const std::string ok = write("ok.toml", kTuning);
  expect_one_line_error(bench({"--steps", "3", "--tuning-ab", ok}), "--steps: must be even");
  expect_one_line_error(bench({"--steps", "2", "--warmup", "0", "--tuning-ab", ok}), "--warmup: at least 1");
}

}  // namespace
}  // namespace trex
