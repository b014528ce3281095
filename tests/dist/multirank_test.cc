// `trex train` under mpirun against the same run in one process, on a tiny V4 model with a
// hash-routed and a score-routed layer and an MTP block, 4 micro-batches per step:
//   - every layout (dp, ep, etp) of 2 and 4 ranks with etp dividing the expert width's blocks
//     (model/moe.h) gives the single process's losses and final weights, optimizer state and
//     routing state bit for bit (so a rerun is bitwise identical); etp 4, which does not divide
//     the tiny model's 2 blocks, equals it up to rounding;
//   - a run stopped under one layout resumes under another bit for bit;
//   - impossible layouts are refused before any work, naming the flag, with and without mpirun;
//   - a stalled rank ends the job with a message once the timeout passes; a dead one at once
//     (mpirun), and the run resumes;
//   - the in-process checks (DISABLED_ tests below, run here under mpirun): the exchange round
//     trip, the expert-parallel MoE layer against the unsplit one, and the training state
//     identical on every rank after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dist_test_util.h"
#include "trex/core/safetensors.h"
#include "trex/dist/layout.h"
#include "trex/model/config.h"
#include "trex/model/transformer.h"
#include "trex/train/config.h"
#include "trex/train/trainer.h"

namespace trex::dist {
namespace {

using namespace testing;

// The single-process reference, trained once for the whole suite: 3 steps, and its tokenizer
// (reused by every other run so that none trains its own).
struct Reference {
  TempDir dir{"dist-ref"};
  std::string tokenizer, config;
  std::vector<double> losses;
  std::string model_bytes, optimizer_bytes;
};

const Reference& reference() {
  static Reference* ref = [] {
    auto* r = new Reference;
    std::string cfg = write_config(r->dir, "first.toml");
    train::TrainOptions o;
    o.out_dir = r->dir.path("tok");
    o.progress = o.print = false;
    o.steps = 1;
    train::run_training(train::load_train_config(cfg), o);
    r->tokenizer = r->dir.path("tok/tokenizer.model");
    r->config = write_config(r->dir, "train.toml", "", r->tokenizer);
    o.out_dir = r->dir.path("ref");
    o.steps = 0;
    train::TrainResult res = train::run_training(train::load_train_config(r->config), o);
    r->losses = res.losses;
    r->model_bytes = read_file(r->dir.path("ref/checkpoints/step-00000003/model.safetensors"));
    r->optimizer_bytes = optimizer_state_bytes(r->dir.path("ref/checkpoints/step-00000003"));
    return r;
  }();
  return *ref;
}

void expect_like_reference(const std::string& run, const std::string& what) {
  const Reference& ref = reference();
  std::vector<double> losses = losses_of(run);
  ASSERT_EQ(losses.size(), ref.losses.size()) << what;
  for (size_t i = 0; i < losses.size(); ++i) EXPECT_EQ(losses[i], ref.losses[i]) << what << " step " << i + 1;
  EXPECT_TRUE(read_file(run + "/checkpoints/step-00000003/model.safetensors") == ref.model_bytes)
      << what << ": weights or routing state differ from the single process";
  EXPECT_TRUE(optimizer_state_bytes(run + "/checkpoints/step-00000003") == ref.optimizer_bytes)
      << what << ": optimizer state differs from the single process";
}

class MultiRankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_available()) GTEST_SKIP() << "mpirun not installed (scripts/install-deps.sh: openmpi-bin)";
  }
};

TEST_F(MultiRankTest, EveryLayoutTrainsLikeOneProcessBitForBit) {
  const Reference& ref = reference();
  ASSERT_EQ(ref.losses.size(), 3u);
  // On one machine the step's gradient pieces and the ZeRO-1 weights go through shared memory
  // (dist/shared_window.h); TREX_DIST_SHM=0 sends them as messages, as across machines: the
  // (dp 2, ep 2) case covers that path.
  struct Case {
    int ranks;
    std::vector<std::string> flags;
    bool messages = false;
  };
  // Expert-tensor parallelism (etp 2) included: each rank computes its half of the expert width
  // as the single process's width blocks, and the halves are added in the single process's
  // pairwise order (model/moe.h), so those layouts are bit for bit too.
  const std::vector<Case> cases = {{2, {"--dp", "2"}},
                                   {2, {"--ep", "2"}},
                                   {2, {"--etp", "2"}},
                                   {4, {"--dp", "4"}},
                                   {4, {"--dp", "2", "--ep", "2"}, true},
                                   {4, {"--ep", "4"}},
                                   {4, {"--ep", "2", "--etp", "2"}},
                                   {4, {"--dp", "2", "--etp", "2"}}};
  for (const Case& c : cases) {
    std::string what = std::to_string(c.ranks) + " ranks", name = "run-" + std::to_string(c.ranks);
    for (const std::string& f : c.flags) what += " " + f, name += "-" + (f.rfind("--", 0) == 0 ? f.substr(2) : f);
    std::string run = ref.dir.path(name);
    if (c.messages) what += " (messages, TREX_DIST_SHM=0)";
    std::vector<std::string> args = {TREX_BINARY, "train", "--config", ref.config, "--out", run, "--threads", "1"};
    if (c.messages) args.insert(args.begin(), {"-x", "TREX_DIST_SHM=0"});
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    ProcessResult p = mpirun(c.ranks, args);
    ASSERT_EQ(p.exit_code, 0) << what << "\n" << p.out << p.err;
    EXPECT_NE(p.out.find("dist: " + std::to_string(c.ranks) + " ranks: dense data-parallel over"), std::string::npos)
        << p.out;
    expect_like_reference(run, what);
  }
}

// The largest |a - b| over the F32 tensors of two safetensors files, relative to each tensor's
// largest magnitude.
double max_weight_diff(const std::string& a, const std::string& b, std::string* worst_name = nullptr) {
  core::SafetensorsFile fa(a), fb(b);
  double worst = 0;
  for (const core::StTensorInfo& t : fa.tensors()) {
    if (t.dtype != core::StDtype::kF32) continue;
    std::span<const std::byte> x = fa.bytes(t), y = fb.bytes(fb.get(t.name));
    const float* p = reinterpret_cast<const float*>(x.data());
    const float* q = reinterpret_cast<const float*>(y.data());
    double d = 0, m = 0;
    for (int64_t i = 0; i < t.numel(); ++i) d = std::max(d, double(std::fabs(p[i] - q[i]))), m = std::max(m, double(std::fabs(q[i])));
    if ((m > 0 ? d / m : d) > worst && worst_name) *worst_name = t.name;
    worst = std::max(worst, m > 0 ? d / m : d);
  }
  return worst;
}

// The gradient norm of the first step of RUN (metrics.jsonl).
double first_grad_norm(const std::string& run) {
  const std::string text = read_file(run + "/metrics.jsonl");
  return nlohmann::json::parse(text.substr(0, text.find('\n'))).at("grad_norm").get<double>();
}

// Expert-tensor parallelism beyond the width blocks (etp 4 on the tiny model's 2 blocks of 32
// columns): each rank's 16 columns are one partial sum, so the MoE outputs and input gradients
// differ from the single process's by rounding (~1e-7 of the values). Checked: the first
// step's gradient norm (the whole reduced gradient; gradients synchronised over a wrong group
// would miss by far more) within 1e-6 relative and every step's loss within 1e-5. The weights
// are printed, not bounded: AdamW divides each gradient element by its own magnitude, so an
// element whose gradient is near zero moves by up to lr whatever its rounding (docs/dist.md).
TEST_F(MultiRankTest, ExpertTensorBeyondTheWidthBlocksTrainsLikeOneProcessUpToRounding) {
  const Reference& ref = reference();
  const double ref_norm = first_grad_norm(ref.dir.path("ref"));
  const std::string what = "4 ranks --etp 4", run = ref.dir.path("run-etp4");
  ProcessResult p = mpirun(4, {TREX_BINARY, "train", "--config", ref.config, "--out", run, "--threads", "1", "--etp", "4"});
  ASSERT_EQ(p.exit_code, 0) << what << "\n" << p.out << p.err;
  EXPECT_NE(p.out.find("etp 4 (4 of 4 routed experts per rank, 16 of each one's 64 columns: like one process up to "
                       "rounding (etp does not divide the 2 width blocks))"),
            std::string::npos) << p.out;
  std::vector<double> losses = losses_of(run);
  ASSERT_EQ(losses.size(), ref.losses.size()) << what;
  for (size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(losses[i], ref.losses[i], 1e-5 * std::fabs(ref.losses[i])) << what << " step " << i + 1;
  const double norm = first_grad_norm(run);
  EXPECT_NEAR(norm, ref_norm, 1e-6 * ref_norm) << what << ": step 1 gradient norm";
  std::string worst;
  const double diff = max_weight_diff(run + "/checkpoints/step-00000003/model.safetensors",
                                      ref.dir.path("ref/checkpoints/step-00000003/model.safetensors"), &worst);
  std::printf("%s: step 1 gradient norm %.1e relative from the single process; weights after 3 steps within %.1e "
              "of each tensor's largest value (largest in %s)\n",
              what.c_str(), std::fabs(norm - ref_norm) / ref_norm, diff, worst.c_str());
}

// The optimizer metric of a run's first step (bytes of optimizer state held by rank 0).
int64_t first_optimizer_bytes(const std::string& run) {
  const std::string text = read_file(run + "/metrics.jsonl");
  return nlohmann::json::parse(text.substr(0, text.find('\n'))).at("optimizer_bytes").get<int64_t>();
}

// The rank whose file holds each element of a checkpoint's optimizer state, from its index (-1:
// none; an element listed twice fails).
std::vector<int> index_holders(const std::string& ckpt, int64_t n) {
  const nlohmann::json j = nlohmann::json::parse(read_file(ckpt + "/optimizer.index.json"));
  std::vector<int> who(static_cast<size_t>(n), -1);
  for (const nlohmann::json& s : j.at("shards")) {
    const std::string file = s.at("file").get<std::string>();  // optimizer-rank-00001-of-00004...
    const int rank = std::stoi(file.substr(15, 5));
    const int64_t offset = s.at("offset").get<int64_t>(), count = s.at("count").get<int64_t>();
    for (int64_t i = offset; i < offset + count; ++i) {
      EXPECT_EQ(who[size_t(i)], -1) << "element " << i << " in two files";
      who[size_t(i)] = rank;
    }
  }
  return who;
}

// ZeRO-1: under mpirun each rank holds one shard of the optimizer state and writes it; a
// checkpoint is the shards plus an index, and resumes under another number of ranks (4 -> 2,
// 4 -> 1 without mpirun, 1 -> 4) bit for bit; a broken index is refused naming the file.
TEST_F(MultiRankTest, ResumesUnderAnotherLayoutBitForBit) {
  const Reference& ref = reference();
  std::string run = ref.dir.path("resume");
  // `mpirun -n 4 trex train CONFIG`: the config given positionally, its layout from [parallel]
  // (the 2-rank resume below reads the same config again from the checkpoint).
  std::string cfg = write_config(ref.dir, "resume.toml", "\n[parallel]\nep = 2\n", ref.tokenizer);
  ProcessResult a = mpirun(4, {TREX_BINARY, "train", cfg, "--out", run, "--threads", "1", "--stop-after", "2"});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find("dist: 4 ranks: dense data-parallel over 4; experts edp 2 x ep 2 x etp 1"), std::string::npos)
      << a.out;
  const std::string ckpt = run + "/checkpoints/step-00000002";
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/optimizer.index.json"));
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/optimizer-rank-00003-of-00004.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(ckpt + "/optimizer.safetensors"));
  EXPECT_LT(first_optimizer_bytes(run) * 3, first_optimizer_bytes(ref.dir.path("ref")))
      << "rank 0 should hold about a quarter of the optimizer state";
  {
    // Each routed expert's optimizer state was written by ranks of its EDP group only (edp 2 x
    // ep 2: ranks with EP index e / 2, i.e. rank % 2), every element by exactly one rank.
    const model::Transformer m(model::load_model_config(ref.dir.path("tiny.toml")), 5, true);
    std::vector<int> who = index_holders(ckpt, m.layout().total);
    EXPECT_EQ(std::count(who.begin(), who.end(), -1), 0) << "elements in no file";
    ParallelLayout L;
    L.dp = 2, L.ep = 2, L.etp = 1;
    const int E = m.config().ffn.routed_experts;
    int64_t checked = 0;
    for (int i = 0; i < m.moe_layers(); ++i)
      for (int e = 0; e < E; ++e)
        for (const char* w : {"w1", "w2", "w3"}) {
          const model::ParamInfo* p = m.layout().find(m.moe_prefix(i) + "ffn.experts." + std::to_string(e) + "." + w);
          ASSERT_NE(p, nullptr);
          const int64_t at = m.layout().offset_of(p->name);
          for (int64_t k = at; k < at + p->numel; ++k, ++checked)
            ASSERT_EQ(L.ep_of(who[size_t(k)]), e / (E / 2)) << p->name << " element " << k - at << " on rank " << who[size_t(k)];
        }
    EXPECT_GT(checked, 0);
  }
  std::string alone = ref.dir.path("resume-alone"), broken = ref.dir.path("resume-broken"),
              tensor = ref.dir.path("resume-etp");
  std::filesystem::copy(run, alone, std::filesystem::copy_options::recursive);
  std::filesystem::copy(run, broken, std::filesystem::copy_options::recursive);
  std::filesystem::copy(run, tensor, std::filesystem::copy_options::recursive);
  ProcessResult b = mpirun(2, {TREX_BINARY, "train", "--resume", run, "--threads", "1"});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  expect_like_reference(run, "4 ranks (ep 2) to step 2, then 2 ranks (ep 2)");
  ProcessResult c = run_process({TREX_BINARY, "train", "--resume", alone, "--threads", "1", "--ep", "1"});
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  expect_like_reference(alone, "4 ranks (ep 2) to step 2, then one process");
  // Expert-tensor parallel without EP: the shards are width slices of every expert.
  ProcessResult g = mpirun(2, {TREX_BINARY, "train", "--resume", tensor, "--threads", "1", "--ep", "1", "--etp", "2"});
  ASSERT_EQ(g.exit_code, 0) << g.out << g.err;
  expect_like_reference(tensor, "4 ranks (ep 2) to step 2, then 2 ranks (etp 2)");
  // One process to step 2, then 4 ranks (dp 4) from its whole-state checkpoint.
  std::string up = ref.dir.path("resume-up");
  ProcessResult d = run_process({TREX_BINARY, "train", "--config", ref.config, "--out", up, "--threads", "1",
                                 "--stop-after", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  ProcessResult e = mpirun(4, {TREX_BINARY, "train", "--resume", up, "--threads", "1"});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  expect_like_reference(up, "one process to step 2, then 4 ranks (dp 4)");
  write_file_atomic(broken + "/checkpoints/step-00000002/optimizer.index.json", "{\"shards\": 3}\n");
  ProcessResult f = run_process({TREX_BINARY, "train", "--resume", broken, "--threads", "1", "--ep", "1"});
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.err.find("step-00000002/optimizer.index.json: not a trex optimizer shard index"), std::string::npos)
      << f.err;
}

// The swap optimizer under ZeRO-1 (each rank swapping its shard) gives AdamW's bits.
TEST_F(MultiRankTest, SwapOptimizerShardsTrainLikeOneProcess) {
  const Reference& ref = reference();
  std::string cfg = write_config(ref.dir, "swap.toml", "", ref.tokenizer);
  std::string text = read_file(cfg);
  text.replace(text.find("[optimizer]\n"), 12, "[optimizer]\nkind = \"swap\"\n");
  write_file_atomic(cfg, text);
  std::string run = ref.dir.path("swap");
  ProcessResult p = mpirun(2, {TREX_BINARY, "train", "--config", cfg, "--out", run, "--threads", "1", "--ep", "2"});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  expect_like_reference(run, "2 ranks (ep 2), swap optimizer");
}

// The swap optimizer's update during the backward under mpirun (each rank's shard handed to it
// range by range as the reducer sums it, dist::StepReducer::stream_round) gives the bits of the
// update after the backward: losses, weights, routing and optimizer state after 3 steps, with
// shared memory and with messages (TREX_DIST_SHM=0), data parallel and expert parallel (whose
// ranges wait for the experts' gradients). clip_with = "previous", so that steps 2 and 3 keep
// the update made during the backward (step 1 clips with its own norm: redone if clipped).
TEST_F(MultiRankTest, OverlappedSwapUpdateEqualsTheUpdateAfterTheBackward) {
  const Reference& ref = reference();
  auto swap_config = [&](const std::string& name, bool overlap) {
    std::string cfg = write_config(ref.dir, name, "", ref.tokenizer);
    std::string text = read_file(cfg);
    text.replace(text.find("[optimizer]\n"), 12,
                 std::string("[optimizer]\nkind = \"swap\"\nclip_with = \"previous\"\nswap_overlap = ") +
                     (overlap ? "true" : "false") + "\n");
    write_file_atomic(cfg, text);
    return cfg;
  };
  const std::string after_cfg = swap_config("swap-after.toml", false), during_cfg = swap_config("swap-during.toml", true);
  const std::string after = ref.dir.path("swap-after");
  ProcessResult a = mpirun(2, {TREX_BINARY, "train", "--config", after_cfg, "--out", after, "--threads", "1"});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find("updates after the backward"), std::string::npos) << a.out;
  const std::vector<double> losses = losses_of(after);
  const std::string model = read_file(after + "/checkpoints/step-00000003/model.safetensors");
  const std::string state = optimizer_state_bytes(after + "/checkpoints/step-00000003");
  struct Variant {
    const char *name, *dir;
    std::vector<std::string> prefix, flags;
  };
  const Variant variants[] = {{"dp 2, shared memory", "swap-during-dp", {}, {}},
                              {"dp 2, messages", "swap-during-msg", {"env", "TREX_DIST_SHM=0"}, {}},
                              {"ep 2, shared memory", "swap-during-ep", {}, {"--ep", "2"}}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    const std::string run = ref.dir.path(v.dir);
    std::vector<std::string> args = v.prefix;
    for (const std::string& x : {std::string(TREX_BINARY), std::string("train"), std::string("--config"), during_cfg,
                                 std::string("--out"), run, std::string("--threads"), std::string("1")})
      args.push_back(x);
    args.insert(args.end(), v.flags.begin(), v.flags.end());
    ProcessResult p = mpirun(2, args);
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
    EXPECT_NE(p.out.find("updates during the backward"), std::string::npos) << p.out;
    EXPECT_EQ(losses_of(run), losses);
    EXPECT_TRUE(read_file(run + "/checkpoints/step-00000003/model.safetensors") == model)
        << "weights or routing state differ from the update after the backward";
    EXPECT_TRUE(optimizer_state_bytes(run + "/checkpoints/step-00000003") == state)
        << "optimizer state differs from the update after the backward";
    // Steps 2 and 3 kept the update made during the backward (clipped with step 1's norm).
    const std::string text = read_file(run + "/metrics.jsonl");
    size_t pos = text.find('\n') + 1;
    for (int step = 2; step <= 3; ++step) {
      const size_t nl = text.find('\n', pos);
      nlohmann::json j = nlohmann::json::parse(text.substr(pos, nl - pos));
      EXPECT_EQ(j.at("step").get<int64_t>(), step);
      EXPECT_FALSE(j.at("swap_redone").get<bool>()) << "step " << step;
      pos = nl + 1;
    }
  }
}

TEST_F(MultiRankTest, ImpossibleLayoutsAreRefusedNamingTheField) {
  const Reference& ref = reference();
  ProcessResult p = mpirun(2, {TREX_BINARY, "train", "--config", ref.config, "--out", ref.dir.path("bad"), "--ep", "3"});
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.err.find("--ep: ep x etp = 3 does not divide the world size 2"), std::string::npos) << p.err;
  EXPECT_FALSE(std::filesystem::exists(ref.dir.path("bad/metrics.jsonl")));
  // Without mpirun: one rank.
  ProcessResult q = run_process({TREX_BINARY, "train", "--config", ref.config, "--out", ref.dir.path("bad1"), "--ep", "2"});
  EXPECT_EQ(q.exit_code, 2);
  EXPECT_NE(q.err.find("--ep: ep x etp = 2 does not divide the world size 1"), std::string::npos) << q.err;
  // The same from the config's [parallel], named by file and field.
  std::string ep3 = write_config(ref.dir, "ep3.toml", "\n[parallel]\nep = 3\n", ref.tokenizer);
  ProcessResult e = mpirun(2, {TREX_BINARY, "train", ep3, "--out", ref.dir.path("bad3")});
  EXPECT_NE(e.exit_code, 0);
  EXPECT_NE(e.err.find("ep3.toml: parallel.ep: ep x etp = 3 does not divide the world size 2"), std::string::npos)
      << e.err;
  // micro_batches must be shared evenly.
  std::string three = write_config(ref.dir, "three.toml", "", ref.tokenizer);
  std::string text = read_file(three);
  text.replace(text.find("micro_batches = 4"), 17, "micro_batches = 3");
  write_file_atomic(three, text);
  ProcessResult r = mpirun(2, {TREX_BINARY, "train", "--config", three, "--out", ref.dir.path("bad2")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("run.micro_batches: 3 micro-batches per step cannot be shared by 2 ranks"), std::string::npos)
      << r.err;
}

TEST_F(MultiRankTest, StalledRankEndsTheJobAfterTheTimeout) {
  const Reference& ref = reference();
  std::string cfg = write_config(ref.dir, "stall.toml", "\n[parallel]\ntimeout_s = 3\ndebug_stall = [1, 2]\n",
                                 ref.tokenizer);
  ProcessResult p = mpirun(2, {TREX_BINARY, "train", "--config", cfg, "--out", ref.dir.path("stall"), "--threads", "1"},
                           120);
  EXPECT_FALSE(p.timed_out) << "the job hung";
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.err.find("rank 0 waited"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("a peer rank died or stalled"), std::string::npos) << p.err;
}

// A rank that dies (here: SIGKILL at step 3, as a crash or the OOM killer would) ends the job
// with mpirun's message naming it, not a hang; the run resumes from its last checkpoint and
// finishes as if nothing had happened (bit for bit the uninterrupted single process).
TEST_F(MultiRankTest, DeadRankEndsTheJobAndTheRunResumes) {
  const Reference& ref = reference();
  auto config = [&](const std::string& name, const std::string& extra) {
    std::string cfg = write_config(ref.dir, name, extra, ref.tokenizer);
    std::string text = read_file(cfg);
    text.replace(text.find("\nevery = 0"), 10, "\nevery = 1");
    write_file_atomic(cfg, text);
    return cfg;
  };
  std::string dying = config("die.toml", "\n[parallel]\ndebug_die = [1, 3]\n"), clean = config("nodie.toml", "");
  std::string run = ref.dir.path("die");
  ProcessResult p = mpirun(2, {TREX_BINARY, "train", dying, "--out", run, "--threads", "1", "--ep", "2"});
  EXPECT_FALSE(p.timed_out) << "the job hung";
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE((p.out + p.err).find("rank 1"), std::string::npos) << p.out << p.err;
  EXPECT_NE((p.out + p.err).find("signal 9"), std::string::npos) << p.out << p.err;
  EXPECT_FALSE(std::filesystem::exists(run + "/checkpoints/step-00000003"));
  ProcessResult q = mpirun(2, {TREX_BINARY, "train", clean, "--resume", run, "--threads", "1", "--ep", "2"});
  ASSERT_EQ(q.exit_code, 0) << q.out << q.err;
  expect_like_reference(run, "2 ranks (ep 2), rank 1 killed at step 3, resumed");
}

TEST_F(MultiRankTest, InProcessChecksPassUnderMpirun) {
  for (int ranks : {2, 4}) {
    ProcessResult p = mpirun(ranks, {TEST_DIST_BINARY, "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_*", "--gtest_color=no"});
    EXPECT_EQ(p.exit_code, 0) << ranks << " ranks\n" << p.out << p.err;
    EXPECT_NE(p.out.find("[  PASSED  ] 5 tests"), std::string::npos) << p.out;
  }
}

}  // namespace
}  // namespace trex::dist
