// Optimizer checkpoints: a run saved and resumed (into the same kind of optimizer or the other
// kind, with other chunking) continues bit for bit like the uninterrupted run; the file is a
// plain safetensors file; truncated, foreign or mismatched files give one-line errors naming the
// file and leave the optimizer's state as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "trex/core/safetensors.h"
#include "trex/optim/adamw.h"
#include "trex/optim/swap_optimizer.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::optim {
namespace {

namespace fs = std::filesystem;

const int64_t kN = 4099 + 3001;

std::vector<ParamGroup> groups() {
  return {{"dense", 4099, {2e-3f, 0.9f, 0.999f, 1e-8f, 0.05f}},
          {"bias", 3001, {1e-3f, 0.9f, 0.99f, 1e-7f, 0.f}}};
}

std::vector<float> normal(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("trex_ckpt_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// kind 0: in-memory AdamW; 1: swap optimizer with chunk `chunk`.
std::unique_ptr<Optimizer> make(int kind, const std::vector<float>& init, int64_t chunk,
                                const std::string& tag) {
  if (kind == 0) return std::make_unique<AdamW>(groups(), init.data());
  SwapOptions o;
  o.path = temp_path(tag + ".swap");
  o.chunk_elems = chunk;
  return std::make_unique<SwapOptimizer>(groups(), init.data(), o);
}

// Runs steps [from, to) with step t's gradient; returns the last bf16 weights.
std::vector<core::bf16> run(Optimizer& o, int from, int to) {
  std::vector<core::bf16> w(static_cast<size_t>(kN));
  for (int t = from; t < to; ++t) {
    std::vector<float> g = normal(kN, 1000 + uint32_t(t), t % 2 ? 1.f : 1e-3f);
    o.step(g.data(), w.data());
  }
  return w;
}

std::vector<float> array(Optimizer& o, StateArray a) {
  std::vector<float> v(static_cast<size_t>(kN));
  o.read_state(a, 0, kN, v.data());
  return v;
}

bool same_state(Optimizer& a, Optimizer& b) {
  for (StateArray s : {StateArray::kMaster, StateArray::kExpAvg, StateArray::kExpAvgSq}) {
    auto x = array(a, s), y = array(b, s);
    if (std::memcmp(x.data(), y.data(), x.size() * 4) != 0) return false;
  }
  return a.step_count() == b.step_count();
}

TEST(Checkpoint, ResumeIsBitExactAcrossOptimizerKinds) {
  std::vector<float> init = normal(kN, 1, 0.3f);
  auto straight = make(0, init, 0, "straight");
  std::vector<core::bf16> want = run(*straight, 0, 10);
  // (saving kind, resuming kind): 0 = in memory, 1 = swap.
  for (auto [k1, k2] : {std::pair{0, 0}, {0, 1}, {1, 0}, {1, 1}}) {
    std::string tag = std::to_string(k1) + std::to_string(k2);
    auto first = make(k1, init, 1024, "a" + tag);
    run(*first, 0, 6);
    std::string ckpt = temp_path(tag + ".safetensors");
    first->save_state(ckpt);
    // Resume from a fresh optimizer built from other initial weights: all comes from the file.
    std::vector<float> other = normal(kN, 99, 1.f);
    auto second = make(k2, other, 3000, "b" + tag);
    second->load_state(ckpt);
    EXPECT_EQ(second->step_count(), 6);
    std::vector<core::bf16> got = run(*second, 6, 10);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 2), 0) << tag;
    EXPECT_TRUE(same_state(*second, *straight)) << tag;
    fs::remove(ckpt);
  }
}

TEST(Checkpoint, FileIsPlainSafetensorsWithMetadata) {
  std::vector<float> init = normal(kN, 2, 0.3f);
  AdamW o(groups(), init.data());
  run(o, 0, 3);
  o.set_lr(1, 5e-4f);
  std::string ckpt = temp_path("meta.safetensors");
  o.save_state(ckpt);
  core::SafetensorsFile f(ckpt);
  EXPECT_EQ(f.metadata().at("format"), "trex.optim.adamw");
  EXPECT_EQ(f.metadata().at("step"), "3");
  EXPECT_EQ(f.metadata().at("params"), std::to_string(kN));
  EXPECT_NE(f.metadata().at("groups").find("\"bias\""), std::string::npos);
  const core::StTensorInfo& m = f.get("master");
  EXPECT_EQ(m.dtype, core::StDtype::kF32);
  EXPECT_EQ(m.shape, std::vector<int64_t>{kN});
  auto master = array(o, StateArray::kMaster);
  EXPECT_EQ(std::memcmp(f.bytes(m).data(), master.data(), master.size() * 4), 0);
  // The learning rate set by a schedule travels with the state.
  AdamW back(groups(), init.data());
  back.load_state(ckpt);
  EXPECT_EQ(back.groups()[1].hyper.lr, 5e-4f);
  fs::remove(ckpt);
}

TEST(Checkpoint, BadFilesGiveOneLineErrorsAndChangeNothing) {
  std::vector<float> init = normal(kN, 3, 0.3f);
  AdamW src(groups(), init.data());
  run(src, 0, 2);
  std::string good = temp_path("good.safetensors");
  src.save_state(good);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});

  std::vector<std::pair<std::string, std::string>> cases;  // (file, expected fragment)
  auto put = [&](const std::string& name, const std::string& content, const std::string& expect) {
    std::string p = temp_path(name);
    std::ofstream(p, std::ios::binary) << content;
    cases.emplace_back(p, expect);
  };
  put("truncated.safetensors", bytes.substr(0, bytes.size() / 2), "truncated");
  put("garbage.safetensors", "this is not an optimizer state\n", "not a safetensors file");
  // A valid safetensors file that is not an optimizer state (a model's weights, say).
  std::string foreign = temp_path("foreign.safetensors");
  std::vector<float> x = {1, 2, 3};
  core::write_safetensors(foreign, {{"wte", core::StDtype::kF32, {3}, x.data(), {}}});
  cases.emplace_back(foreign, "not a trex optimizer state");
  // The state of other groups.
  std::string other = temp_path("other.safetensors");
  AdamW wrong({{"dense", 4099, {}}, {"bias", 3000, {}}, {"x", 1, {}}}, init.data());
  wrong.save_state(other);
  cases.emplace_back(other, "parameter groups");
  std::string other2 = temp_path("other2.safetensors");
  AdamW wrong2({{"dense", 4100, {}}, {"bias", 3000, {}}}, init.data());
  wrong2.save_state(other2);
  cases.emplace_back(other2, "group 0 is 'dense' of 4100 elements");
  cases.emplace_back(temp_path("absent.safetensors"), "cannot open");

  AdamW o(groups(), init.data());
  SwapOptions so;
  so.path = temp_path("bad.swap");
  so.chunk_elems = 1024;
  SwapOptimizer s(groups(), init.data(), so);
  run(o, 0, 1);
  run(s, 0, 1);
  auto before = array(o, StateArray::kExpAvg);
  for (Optimizer* opt : {static_cast<Optimizer*>(&o), static_cast<Optimizer*>(&s)}) {
    for (const auto& [path, expect] : cases) {
      std::string what;
      try {
        opt->load_state(path);
      } catch (const InputError& e) {
        what = e.what();
      }
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(expect), std::string::npos) << path << ": " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_EQ(opt->step_count(), 1);
  }
  auto after = array(o, StateArray::kExpAvg);
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * 4), 0);
  EXPECT_TRUE(same_state(o, s));
  // Saving where nothing can be written: the system refused it (IoError, exit 1), not bad input.
  EXPECT_THROW(o.save_state("/nonexistent-dir/x/opt.safetensors"), IoError);
  for (const auto& c : cases) fs::remove(c.first);
  fs::remove(good);
}

// groups() cut to elements [lo, hi) (a ZeRO-1 shard).
std::vector<ParamGroup> cut(int64_t lo, int64_t hi) {
  std::vector<ParamGroup> out;
  int64_t at = 0;
  for (ParamGroup g : groups()) {
    const int64_t a = std::max(lo, at), b = std::min(hi, at + g.size);
    at += g.size;
    if (b > a) g.size = b - a, out.push_back(g);
  }
  return out;
}

// A state saved as shards of one split loads into the shards of another split (and whole), and
// the runs continue bit for bit like the unsharded one: AdamW is elementwise.
TEST(Checkpoint, ShardedStateLoadsUnderAnotherSplit) {
  std::vector<float> init = normal(kN, 4, 0.3f);
  AdamW straight(groups(), init.data());
  std::vector<core::bf16> want = run(straight, 0, 10);
  // Three shards of the first split, stepped 6 times on their slices of the gradients.
  const std::vector<int64_t> first = {0, 2000, 5000, kN};
  std::vector<StatePiece> pieces;
  for (size_t q = 0; q + 1 < first.size(); ++q) {
    AdamW shard(cut(first[q], first[q + 1]), init.data() + first[q]);
    std::vector<core::bf16> w(static_cast<size_t>(kN));
    for (int t = 0; t < 6; ++t) {
      std::vector<float> g = normal(kN, 1000 + uint32_t(t), t % 2 ? 1.f : 1e-3f);
      shard.step(g.data() + first[q], w.data() + first[q]);
    }
    pieces.push_back({temp_path("shard" + std::to_string(q) + ".safetensors"), first[q]});
    shard.save_state(pieces.back().path);
  }
  // Two shards of another split, and one whole optimizer, continue to step 10.
  const std::vector<int64_t> second = {0, 3550, kN};
  std::vector<core::bf16> got(static_cast<size_t>(kN));
  for (size_t q = 0; q + 1 < second.size(); ++q) {
    std::vector<float> other = normal(kN, 98, 1.f);
    AdamW shard(cut(second[q], second[q + 1]), other.data());
    shard.load_state_range(pieces, second[q]);
    EXPECT_EQ(shard.step_count(), 6);
    for (int t = 6; t < 10; ++t) {
      std::vector<float> g = normal(kN, 1000 + uint32_t(t), t % 2 ? 1.f : 1e-3f);
      shard.step(g.data() + second[q], got.data() + second[q]);
    }
  }
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 2), 0);
  std::vector<float> other = normal(kN, 97, 1.f);
  AdamW whole(groups(), other.data());
  whole.load_state_range(pieces, 0);
  run(whole, 6, 10);
  EXPECT_TRUE(same_state(whole, straight));
  // A missing shard and shards of different steps are refused, naming a file.
  auto error_of = [&](const std::vector<StatePiece>& ps) {
    AdamW o(groups(), init.data());
    try {
      o.load_state_range(ps, 0);
    } catch (const InputError& e) {
      EXPECT_EQ(o.step_count(), 0);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of({pieces[0], pieces[2]}).find("leave elements [2000, 5000) uncovered"), std::string::npos)
      << error_of({pieces[0], pieces[2]});
  EXPECT_NE(error_of({pieces[0], pieces[1]}).find("does not cover elements [5000, 7100)"), std::string::npos);
  AdamW late(cut(2000, 5000), init.data() + 2000);
  run(late, 0, 0);
  std::string late_path = temp_path("late.safetensors");
  late.save_state(late_path);
  EXPECT_NE(error_of({pieces[0], {late_path, 2000}, pieces[2]}).find("step 0 differs"), std::string::npos);
  for (const StatePiece& p : pieces) fs::remove(p.path);
  fs::remove(late_path);
}

}  // namespace
}  // namespace trex::optim
