// The tiling program and the performance models: the 0-1 program solved by CBC finds the exact
// optimum of the model (checked against enumerating every choice), pipes overlap as a max,
// forbidden values and pairs are respected, and the GEMM model's start obeys its capacities.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "trex/aura/choice_ip.h"
#include "trex/aura/diagnose.h"
#include "trex/aura/hardware.h"
#include "trex/aura/target.h"
#include "trex/core/cpu_features.h"
#include "trex/kernels/kv_compressor.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/kernels/tuning.h"
#include "trex/kernels/tuning_builtins.h"
#include "trex/util/error.h"

#include "test_machine.h"

namespace trex::aura {
namespace {

// A Zen-3-like machine with round numbers, so the tests do not depend on the host's probe.
AuraHardware test_machine() { return round_avx2_machine(2, 200e9, 90e9, 30e9); }

// Every choice's cost, the minimum by enumeration.
double brute_force(const ChoiceProblem& pr, std::vector<int>* arg = nullptr) {
  std::vector<int> idx(pr.params.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    double c = choice_cost(pr, idx);
    if (c < best) {
      best = c;
      if (arg) *arg = idx;
    }
    size_t p = 0;
    for (; p < idx.size(); ++p) {
      if (++idx[p] < int(pr.params[p].values.size())) break;
      idx[p] = 0;
    }
    if (p == idx.size()) break;
  }
  return best;
}

TEST(ChoiceIp, SolvesRandomProblemsExactly) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 12; ++trial) {
    ChoiceProblem pr;
    pr.pipes = {"a", "b"};
    pr.pipe_constant = {u(rng), u(rng)};
    pr.constant = 0.5;
    for (int p = 0; p < 3; ++p) {
      ChoiceParam cp;
      cp.name = "p" + std::to_string(p);
      for (int v = 0; v < 4; ++v) {
        cp.values.push_back(v);
        cp.cost.push_back(u(rng));
        cp.pipe.push_back(int(rng() % 3) - 1);
        cp.forbidden.push_back(u(rng) < 0.15);
        cp.serial.push_back(u(rng) * 0.1);
      }
      cp.forbidden[size_t(trial % 4)] = false;
      pr.params.push_back(cp);
    }
    for (int k = 0; k < 6; ++k) {
      int p = int(rng() % 3), q = (p + 1) % 3;
      pr.pairs.push_back({p, int(rng() % 4), q, int(rng() % 4), u(rng), u(rng) < 0.2, int(rng() % 3) - 1});
    }
    double want = brute_force(pr);
    ChoiceSolution s = solve_choices(pr);
    if (!std::isfinite(want)) {
      EXPECT_FALSE(s.feasible) << trial;
      continue;
    }
    ASSERT_TRUE(s.feasible) << trial << " " << s.status;
    EXPECT_NEAR(s.objective, want, 1e-9) << trial;
    EXPECT_EQ(s.solver, "cbc");
  }
}

TEST(ChoiceIp, OverlappingPipesCostTheirMaximum) {
  ChoiceProblem pr;
  pr.pipes = {"fma", "load"};
  pr.params.push_back({"x", {0, 1}, {3.0, 1.0}, {}, {0, 0}, {}});  // fma time
  pr.params.push_back({"y", {0, 1}, {2.0, 4.0}, {}, {1, 1}, {}});  // load time
  EXPECT_DOUBLE_EQ(choice_cost(pr, {0, 0}), 3.0);
  EXPECT_DOUBLE_EQ(choice_cost(pr, {1, 0}), 2.0);
  ChoiceSolution s = solve_choices(pr);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.index, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(s.objective, 2.0);
}

// The GEMM model's cost without its tie-break (1e-4 of the FMA time per parameter off the
// built-in, target.cc): the physical terms, which the hand-computed tests below check.
double physical_cost(const TuneTarget& t, const AuraHardware& hw, const std::vector<int>& idx) {
  ChoiceProblem pr = performance_model(t, hw);
  for (ChoiceParam& p : pr.params) p.serial.clear();
  return choice_cost(pr, idx);
}

TEST(GemmModel, TheProgramMatchesEnumerationAndRespectsCapacities) {
  AuraHardware hw = test_machine();
  for (auto dims : {std::vector<int64_t>{512, 512, 512}, std::vector<int64_t>{64, 2048, 1024},
                    std::vector<int64_t>{2048, 256, 4096}}) {
    TuneTarget t = make_target("gemm", dims, hw);
    ChoiceProblem pr = performance_model(t, hw);
    std::vector<int> arg;
    double want = brute_force(pr, &arg);
    ChoiceSolution s = solve_choices(pr);
    ASSERT_TRUE(s.feasible);
    EXPECT_NEAR(s.objective, want, 1e-12 + 1e-9 * want);
    Config c = t.config_at(s.index);
    EXPECT_LE(4.0 * double(c["kc"]) * double(c["nc"]), hw.l3_bytes / 2.0);
    // More depth per block never costs C traffic: the model prefers the largest KC that keeps
    // the slivers in L1 at a full-depth shape.
    EXPECT_GT(s.objective, t.flops / hw.peak_flops * 0.99);
  }
}

// The split's terms follow gemm.cc's threading since 981268b (reviewer 2, session 14): each thread
// computes its own contiguous MR panels (split 1) or NR slivers (split 2) of C with its own packed
// A and B, one pool job per call. Hand-computed on the test machine (two threads, bw_mem 30 GB/s,
// peak 200 GFLOP/s), micro-kernel 2 (6 x 16), nc 1024: the two splits differ only in serial terms.
TEST(GemmModel, PricesEachThreadsOwnPartOfC) {
  AuraHardware hw = test_machine();
  auto cost = [&](const TuneTarget& t, const AuraHardware& h, int64_t split, int64_t nc) {
    Config c = t.config_at(std::vector<int>(t.space.size(), 0));
    c["split"] = split;
    c["nc"] = nc;
    c["ukernel"] = 2;
    const std::vector<int> idx = t.index_of(c);
    EXPECT_EQ(t.config_at(idx), c);  // every value is in the space
    return physical_cost(t, h, idx);
  };
  // 100 x 3000 x 256. Split 1: every thread packs all of B, one B packing more:
  // 8 x 256 x 3000 / 30e9 = 2.048e-4 s; 17 panels of 6 rows, 9 on the larger part: imbalance
  // 18/17 - 1 of T_fma = 2 x 100 x 3000 x 256 / 200e9 x (102 x 3008) / (100 x 3000) = 7.8544896e-4;
  // A packed for ceil(3000 / 1024) = 3 column blocks. Split 2: 188 slivers, 94 a thread (1504 and
  // 1496 columns): no imbalance; each thread packs all of A for its 2 column blocks, 4 in all:
  // one more A packing, 8 x 100 x 256 / 30e9 = 204800 / 30e9 s.
  TuneTarget wide = make_target("gemm", {100, 3000, 256}, hw);
  EXPECT_NEAR(cost(wide, hw, 1, 1024) - cost(wide, hw, 2, 1024), 2.048e-4 + 7.8544896e-4 / 17 - 204800 / 30e9, 1e-12);
  // 3000 x 100 x 256. Split 1: one more B packing, 8 x 256 x 100 / 30e9 = 204800 / 30e9; 500
  // panels, even. Split 2: 7 slivers, 4 on the larger part: imbalance 8/7 - 1 of T_fma =
  // 2 x 3000 x 100 x 256 / 200e9 x 112 / 100 = 8.6016e-4; its threads' parts (48 and 52 columns)
  // each pack all of A once, against once on split 1: 8 x 3000 x 256 / 30e9 = 6144000 / 30e9 more.
  TuneTarget tall = make_target("gemm", {3000, 100, 256}, hw);
  int64_t nc_tall = 0;  // every nc candidate is capped at n = 100 (one column block)
  for (const SpaceParam& sp : tall.space)
    if (sp.name == "nc") nc_tall = sp.values.back();
  ASSERT_GE(nc_tall, 100);
  EXPECT_NEAR(cost(tall, hw, 2, nc_tall) - cost(tall, hw, 1, nc_tall), 8.6016e-4 / 7 + 6144000 / 30e9 - 204800 / 30e9,
              1e-12);
  // The program's split follows: columns for the wide C, rows for the tall one.
  EXPECT_EQ(wide.config_at(solve_choices(performance_model(wide, hw)).index)["split"], 2);
  EXPECT_EQ(tall.config_at(solve_choices(performance_model(tall, hw)).index)["split"], 1);
  // One pool job per call (5 us) with threads; one thread runs without the pool, and there the
  // two splits cost the same (no imbalance, each operand packed once, A per column block).
  EXPECT_NEAR(performance_model(wide, hw).constant, 8.0 * 256 * 3000 / 30e9 + 5e-6, 1e-15);
  AuraHardware one = hw;
  one.threads = 1;
  EXPECT_NEAR(performance_model(wide, one).constant, 8.0 * 256 * 3000 / 30e9, 1e-15);
  EXPECT_DOUBLE_EQ(cost(wide, one, 1, 1024), cost(wide, one, 2, 1024));
  EXPECT_DOUBLE_EQ(cost(tall, one, 1, nc_tall), cost(tall, one, 2, nc_tall));
}

// B's slivers are read from L2 once per row block of each thread's own part of C (session 15:
// the term had counted row blocks over all of m). Hand-computed on the test machine with the
// FMA pipe made negligible against the loads (so the load pipe is the time; the calls' C tiles,
// on the FMA pipe since session 16, under an L2 of 200 MB/s): 96 x 512 x 64, micro-kernel 2
// (6 x 16), 16 MR panels. Row split: each thread has 8 panels (48 rows), so mc 48 and mc 96 are
// one block each and cost the same. Column split: each thread has all 16 panels against its 16 of
// the 32 slivers (256 columns): mc 48 is two blocks, mc 96 one, a B part more at one core's L2
// bandwidth: 4 x 64 x 256 / 200e6 s. At one thread both splits: all of B once more.
TEST(GemmModel, RowBlocksArePerThreadPart) {
  AuraHardware hw = test_machine();
  hw.peak_flops = hw.peak_avx2 = 1e18;
  hw.bw_l2 = 200e6;
  TuneTarget t = make_target("gemm", {96, 512, 64}, hw);
  auto cost = [&](const AuraHardware& h, int64_t split, int64_t mc) {
    Config c = t.config_at(std::vector<int>(t.space.size(), 0));
    c["kc"] = 64;
    c["nc"] = 512;
    c["split"] = split;
    c["mc"] = mc;
    c["ukernel"] = 2;
    const std::vector<int> idx = t.index_of(c);
    EXPECT_EQ(t.config_at(idx), c);  // every value is in the space
    return physical_cost(t, h, idx);
  };
  EXPECT_NEAR(cost(hw, 1, 48), cost(hw, 1, 96), 1e-12);
  EXPECT_NEAR(cost(hw, 2, 48) - cost(hw, 2, 96), 4.0 * 64 * 256 / 200e6, 1e-12);
  AuraHardware one = hw;
  one.threads = 1;
  for (int64_t split : {1, 2}) EXPECT_NEAR(cost(one, split, 48) - cost(one, split, 96), 4.0 * 64 * 512 / 200e6, 1e-12);
}

// Where the FMA time hides every load term, the model's blockings tie; the start keeps the
// built-in's (session 15: CBC had returned kc 64 or 128 by its search order, which the tables
// measure 2-16% slower than the analytic 512 on this machine's two-thread GEMM spaces).
TEST(GemmModel, TiesKeepTheBuiltinBlocking) {
  AuraHardware hw = test_machine();
  hw.peak_flops = hw.peak_avx2 = 1e9;  // every load term far under the FMA time
  for (auto dims : {std::vector<int64_t>{2048, 256, 4096}, std::vector<int64_t>{128, 2048, 1024}}) {
    TuneTarget t = make_target("gemm", dims, hw);
    const Config start = t.config_at(solve_choices(performance_model(t, hw)).index), builtin = builtin_config(t, hw);
    EXPECT_EQ(start.at("kc"), builtin.at("kc"));
    EXPECT_EQ(start.at("mc"), builtin.at("mc"));
    EXPECT_EQ(start.at("nc"), builtin.at("nc"));
  }
}

// Each micro-kernel call costs its C tile beside its FMAs (session 16): 1.45 ns per 64-byte line
// of the tile, on the FMA pipe. Hand-computed on the test machine (AVX2, 6 x 16: 6 lines, 8.7 ns
// a call) with the load terms made negligible: 512 x 512 x 512 has 86 x 32 = 2752 tiles,
// 1376 a thread; kc 64 makes 8 calls per tile, kc 512 one.
TEST(GemmModel, EachMicroKernelCallCostsItsCTileBesideItsFmas) {
  AuraHardware hw = test_machine();
  hw.bw_l1 = hw.bw_l2 = hw.bw_l3 = hw.bw_mem = 1e18;
  TuneTarget t = make_target("gemm", {512, 512, 512}, hw);
  auto cost = [&](const AuraHardware& h, int64_t kc) {
    Config c = t.config_at(std::vector<int>(t.space.size(), 0));
    c["kc"] = kc;
    c["ukernel"] = 2;
    const std::vector<int> idx = t.index_of(c);
    EXPECT_EQ(t.config_at(idx), c);  // every value is in the space
    return physical_cost(t, h, idx);
  };
  EXPECT_NEAR(cost(hw, 64) - cost(hw, 512), 1376.0 * 7 * 8.7e-9, 1e-12);
  AuraHardware one = hw;
  one.threads = 1;
  EXPECT_NEAR(cost(one, 64) - cost(one, 512), 2752.0 * 7 * 8.7e-9, 1e-12);
}

// The calls are on the FMA pipe, beside the loads, not after them. With the FMAs negligible and the
// load pipe the time (an L2 of 200 MB/s), kc 64 against kc 256 (both slivers in L1: 6 x 16 at
// kc 256 is 22.5 KiB of the 28 KiB the term allows; the A block in L2 at mc 48) differs by the C
// tiles' traffic alone, 8 x 512 x 512 x (8 - 2) bytes at two cores' L2 bandwidth; were the calls
// serial (1376 tiles a thread x 6 more calls x 8.7 ns), they would add 72 us to it.
TEST(GemmModel, TheCallsHideUnderTheLoadPipe) {
  AuraHardware hw = test_machine();
  hw.peak_flops = hw.peak_avx2 = 1e18;
  hw.bw_l2 = 200e6;
  TuneTarget t = make_target("gemm", {512, 512, 512}, hw);
  auto cost = [&](int64_t kc) {
    Config c = t.config_at(std::vector<int>(t.space.size(), 0));
    c["kc"] = kc;
    c["mc"] = 48;
    c["ukernel"] = 2;
    const std::vector<int> idx = t.index_of(c);
    EXPECT_EQ(t.config_at(idx), c);  // every value is in the space
    return physical_cost(t, hw, idx);
  };
  EXPECT_NEAR(cost(64) - cost(256), 8.0 * 512 * 512 * (8 - 2) / (2 * 200e6), 1e-12);
}

// With the calls priced the model chooses depth itself: where the FMA time hides the loads, the
// deepest block wins over a shallow built-in (an L2 of 128 KiB gives the analytic kc 64 with
// AVX-512's 32-wide slivers, 128 with AVX2's), which the tie rule alone kept (session 15).
TEST(GemmModel, TheCallCostPrefersDeepBlocksOverAShallowBuiltin) {
  AuraHardware hw = test_machine();
  hw.l2_bytes = 128 << 10;
  for (auto dims : {std::vector<int64_t>{512, 512, 512}, std::vector<int64_t>{2048, 256, 4096}}) {
    TuneTarget t = make_target("gemm", dims, hw);
    ASSERT_LE(builtin_config(t, hw).at("kc"), 128);
    EXPECT_EQ(t.config_at(solve_choices(performance_model(t, hw)).index).at("kc"), 512);
  }
}

// The A-block level test holds the rows gemm.cc packs. 150 rows with mc 96 at kc 512: AVX-512's
// 13 panels of 12 rows go into two blocks of 7 panels (84 rows, 168 KiB), AVX2's 25 panels of 6
// into two of 13 (78 rows, 156 KiB): under half of an L2 of 352 KiB (176 KiB), as of one of 512
// KiB, so both cost the same. (Priced by MC, 4 x 96 x 512 = 192 KiB, it had streamed from L3
// under the smaller L2.) The machine's ISA is the host's, whose register tile the space uses.
TEST(GemmModel, TheABlockIsTheRowsGemmPacks) {
  AuraHardware hw = test_machine();
  hw.isa = core::to_string(core::best_isa());
  hw.peak_flops = hw.peak_avx2 = 1e18;
  hw.bw_l2 = 200e6;  // the load pipe is the time
  AuraHardware small = hw;
  small.l2_bytes = 352 << 10;
  auto cost = [&](const AuraHardware& h) {
    TuneTarget t = make_target("gemm", {150, 512, 512}, h);
    Config c = t.config_at(std::vector<int>(t.space.size(), 0));
    c["kc"] = 512;
    c["mc"] = 96;
    c["nc"] = 512;
    const std::vector<int> idx = t.index_of(c);
    EXPECT_EQ(t.config_at(idx), c);
    return physical_cost(t, h, idx);
  };
  EXPECT_NEAR(cost(small), cost(hw), 1e-12);
}

// GEMM's 6 x 16 beside 12 x 32 runs at most 0.965 of the wide tile's FMA rate (session 29). On the
// Zen 4 VM the probe times both FMA loops at one rate (116.5 against 117.3 GFLOP/s a core: 512-bit
// FMAs double-pumped), and the model had taken 6 x 16 on an edge's padding (256 rows: 22 panels of
// 12 pad 3.1%, 43 of 6 pad 0.8%) or a thread's imbalance (512 rows at two threads: 43 panels of 12
// split 22 + 21, 86 of 6 even), 1.06-1.23 of the best on the tables, where 6 x 16 ran 0.91-0.99
// of 12 x 32. Where the probe prices the AVX2 loop at half, the cap changes nothing. The Zen 4 VM
// as session 26's probe describes it; the space's micro-kernels are the host's.
TEST(GemmModel, TheNarrowTileRunsBelowTheWideTilesRate) {
  for (int threads : {1, 2}) {
    AuraHardware hw = test_machine();
    hw.isa = "avx512";
    hw.threads = threads;
    hw.l2_bytes = 1 << 20;
    hw.peak_flops = threads * 117.3e9;
    hw.peak_avx2 = threads * 116.5e9;
    hw.bw_l1 = 214.1e9;
    hw.bw_l2 = 115.9e9;
    hw.bw_l3 = 79.2e9;
    hw.bw_mem = 51.6e9;
    for (auto dims : {std::vector<int64_t>{256, 512, 2048}, std::vector<int64_t>{512, 256, 2048}}) {
      const TuneTarget t = make_target("gemm", dims, hw);
      const auto space_uk = std::find_if(t.space.begin(), t.space.end(), [](const SpaceParam& p) { return p.name == "ukernel"; });
      ASSERT_NE(space_uk, t.space.end()) << t.shape_text();
      const std::vector<int64_t>& uk = space_uk->values;
      if (std::find(uk.begin(), uk.end(), 3) == uk.end()) GTEST_SKIP() << "the host has no AVX-512 micro-kernel";
      const ChoiceProblem pr = performance_model(t, hw);
      const auto choice_uk = std::find_if(pr.params.begin(), pr.params.end(), [](const ChoiceParam& c) { return c.name == "ukernel"; });
      ASSERT_NE(choice_uk, pr.params.end()) << t.shape_text();
      const ChoiceParam& p = *choice_uk;
      const size_t u2 = size_t(std::find(p.values.begin(), p.values.end(), 2) - p.values.begin());
      const double m = double(dims[0]), n = double(dims[1]);
      const double padded6 = std::ceil(m / 6) * 6 * std::ceil(n / 16) * 16;
      EXPECT_NEAR(p.cost[u2], t.flops / (0.965 * hw.peak_flops) * padded6 / (m * n), 1e-12);
      EXPECT_EQ(t.config_at(solve_choices(pr).index).at("ukernel"), 3) << t.shape_text() << " at " << threads;
      // An AVX2 loop probed at half the rate: priced at the probe's rate, as before.
      AuraHardware half = hw;
      half.peak_avx2 = hw.peak_flops / 2;
      const ChoiceProblem ph = performance_model(t, half);
      const auto half_uk = std::find_if(ph.params.begin(), ph.params.end(), [](const ChoiceParam& c) { return c.name == "ukernel"; });
      ASSERT_NE(half_uk, ph.params.end()) << t.shape_text();
      const ChoiceParam& q = *half_uk;
      EXPECT_NEAR(q.cost[u2], t.flops / half.peak_avx2 * padded6 / (m * n), 1e-12);
    }
  }
}

TEST(RowModel, PrefersStreamingStoresOnlyBeyondTheCachesAndWhereTheProbeMeasuredTheirGain) {
  AuraHardware hw = test_machine();
  hw.nt_gain = 1.25;  // the probe's triad_nt / triad, measured with two threads
  hw.nt_threads = 2;
  TuneTarget big = make_target("rmsnorm.fwd", {8192, 8192}, hw);
  TuneTarget small = make_target("rmsnorm.fwd", {64, 1024}, hw);
  auto stream_of = [&](const TuneTarget& t, const AuraHardware& h) {
    ChoiceSolution s = solve_choices(performance_model(t, h));
    EXPECT_TRUE(s.feasible);
    return t.config_at(s.index)["stream"];
  };
  EXPECT_EQ(stream_of(big, hw), 2);
  EXPECT_EQ(stream_of(small, hw), 1);
  // One thread: the two-thread gain is no evidence for one core's stores.
  AuraHardware one = hw;
  one.threads = 1;
  EXPECT_EQ(stream_of(make_target("rmsnorm.fwd", {8192, 8192}, one), one), 1);
  // No triad_nt in the description, or one no faster than the triad: normal stores.
  AuraHardware none = hw;
  none.nt_gain = 0;
  EXPECT_EQ(stream_of(big, none), 1);
  none.nt_gain = 0.95;
  EXPECT_EQ(stream_of(big, none), 1);
}

// With non-temporal stores only the input stays in the caches across calls (session 7: at one
// thread RMSNorm 1024x4096 ran 0.75x with them, its 16 MiB input in L3, while SwiGLU, whose
// inputs are twice its output, lost 1.03-1.13x). The input alone stays in L3 up to half of it;
// input and output with normal stores up to three quarters (session 15).
TEST(RowModel, WithStreamingStoresOnlyTheInputCompetesForTheCaches) {
  AuraHardware one = test_machine();  // L3 32 MiB: half is 16 MiB, three quarters 24 MiB
  one.threads = 1;
  one.nt_gain = 1.25;
  one.nt_threads = 2;  // no credit for the write itself at one thread
  auto stream_of = [&](const TuneTarget& t) {
    ChoiceSolution s = solve_choices(performance_model(t, one));
    EXPECT_TRUE(s.feasible);
    return t.config_at(s.index)["stream"];
  };
  EXPECT_EQ(stream_of(make_target("rmsnorm.fwd", {1024, 4096}, one)), 2);  // in 16 MiB, in + out 32 MiB
  EXPECT_EQ(stream_of(make_target("swiglu.fwd", {1024, 4096}, one)), 1);   // in 32 MiB
  EXPECT_EQ(stream_of(make_target("rmsnorm.fwd", {2048, 4096}, one)), 1);  // in 32 MiB: both at memory
  EXPECT_EQ(stream_of(make_target("rmsnorm.fwd", {256, 4096}, one)), 1);   // in + out 8 MiB: all in L3
  EXPECT_EQ(stream_of(make_target("rmsnorm.fwd", {1536, 2048}, one)), 1);  // in + out 24 MiB: in L3
  // Two threads, where the probe credits the non-temporal write (1.25x): in + out of 20 MiB
  // (in 10 MiB) still stays in L3 with normal stores, which win (session 14's idle table,
  // SwiGLU backward 128x8192, 20 MiB: non-temporal 1.98x); 80 MiB streams. (RMSNorm's four
  // lane-operations an element keep the vector pipe under both store kinds' memory time.)
  AuraHardware two = one;
  two.threads = 2;
  auto stream_two = [&](const TuneTarget& t) { return t.config_at(solve_choices(performance_model(t, two)).index)["stream"]; };
  EXPECT_EQ(stream_two(make_target("rmsnorm.fwd", {1280, 2048}, two)), 1);
  EXPECT_EQ(stream_two(make_target("rmsnorm.fwd", {5120, 2048}, two)), 2);
}

// Where the vector pipe hides the memory pipe under both store kinds (SwiGLU forward at one thread:
// 32 lane-ops an element), the model cannot rank them: it keeps the kernel's own choice, streaming
// an output of at least 8 MiB (session 28: the solver had taken normal stores there, 1.02-1.05x
// the best on both Zen 4 tables). The other kind is dearer by the tie's 1e-4 of the call only; a
// memory-bound space is still decided by its terms (RMSNorm 8192x8192 above: normal stores at one
// thread though its 256 MiB output streams by size).
TEST(RowModel, AStoreTieKeepsTheKernelsOwnChoiceBySize) {
  AuraHardware one = round_avx2_machine(1, 100e9, 90e9, 30e9);  // 50e9 lane-ops/s, memory 30 GB/s
  one.nt_gain = 1.5;
  one.nt_threads = 2;  // no credit for the write at one thread
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> cases = {
      {{1024, 4096}, 2},  // output 16 MiB: the kernel streams it; vector 2.7 ms, memory 1.7 ms
      {{256, 4096}, 1}};  // output 4 MiB: it does not; in + out 12 MiB in L3
  for (const auto& [dims, own] : cases) {
    const TuneTarget t = make_target("swiglu.fwd", dims, one);
    const ChoiceProblem pr = performance_model(t, one);
    const ChoiceSolution s = solve_choices(pr);
    ASSERT_TRUE(s.feasible);
    Config c = t.config_at(s.index);
    EXPECT_EQ(builtin_config(t, one).at("stream"), own) << t.shape_text();
    EXPECT_EQ(c.at("stream"), own) << t.shape_text();
    Config other = c;
    other["stream"] = own == 2 ? 1 : 2;
    const double chosen = choice_cost(pr, s.index), moved = choice_cost(pr, t.index_of(other));
    EXPECT_GT(moved, chosen) << t.shape_text();
    EXPECT_LT(moved, chosen * (1 + 2e-4)) << t.shape_text();
  }
}

// Cross-entropy's sum-of-exp pass waits for its span's maximum, so its read is serial (added to
// the time, not hidden under the vector pipe), from L1 for a tile of at most one L1 way
// (32 KiB / 8 ways = 4 KiB = 1024 logits), else from L2 for a row of at most half of L2, else
// from memory. Hand-computed on the test machine at one thread.
// The sum pass is serial after the max pass and reads its span from L1 (a tile of one L1 way), L2
// (a row of at most half of L2) or memory; a whole row keeps its exps for the gradient, a tiled
// row computes them again there: 20 lane-ops per logit, serial (test machine: AVX2, 8 lanes at
// 200 GFLOP/s, 100e9 lane-ops/s). Since cross_entropy.cc keeps the exps (session 9) the whole row
// wins; before, a tile of one L1 way did (session 8 tables).
TEST(RowModel, CrossEntropySecondPassIsSerialAndATiledRowComputesItsExpsAgain) {
  AuraHardware one = test_machine();
  one.threads = 1;
  auto cost = [&](const TuneTarget& t, const ChoiceProblem& pr, int64_t tile) {
    return choice_cost(pr, t.index_of({{"block_elems", 65536}, {"vocab_tile", tile}}));
  };
  // 16 x 4096: 65536 logits, 256 KiB; the 16 KiB row fits half of L2 (256 KiB).
  TuneTarget small = make_target("cross_entropy", {16, 4096}, one);
  ChoiceProblem ps = performance_model(small, one);
  const double l1 = 65536 * 4 / 400e9, l2 = 65536 * 4 / 200e9, exps = 65536 * 20 / 100e9;
  EXPECT_NEAR(cost(small, ps, 1024) - cost(small, ps, 0), l1 - l2 + exps, 1e-12);  // 12.5 us
  EXPECT_NEAR(cost(small, ps, 2048) - cost(small, ps, 0), exps, 1e-12);            // 8 KiB: two ways, L2
  EXPECT_NEAR(cost(small, ps, 4096), cost(small, ps, 0), 1e-12);                   // one tile = the row
  EXPECT_EQ(small.config_at(solve_choices(ps).index)["vocab_tile"], 0);
  // 4 x 131072: the 512 KiB row does not fit half of L2, so the whole-row pass reads memory; the
  // tile's L1 read saves 64.7 us of it, its exps cost 104.9 us.
  TuneTarget wide = make_target("cross_entropy", {4, 131072}, one);
  ChoiceProblem pw = performance_model(wide, one);
  const double bytes = 4.0 * 131072 * 4;
  EXPECT_NEAR(cost(wide, pw, 1024) - cost(wide, pw, 0), bytes / 400e9 - bytes / 30e9 + 524288 * 20 / 100e9, 1e-12);
  EXPECT_EQ(wide.config_at(solve_choices(pw).index)["vocab_tile"], 0);
}

TEST(Target, ShapesAndKernelsAreChecked) {
  AuraHardware hw = test_machine();
  EXPECT_EQ(parse_shape("gemm", "64x32x16"), (std::vector<int64_t>{64, 32, 16}));
  EXPECT_EQ(parse_shape("gemm", "").size(), 3u);
  EXPECT_THROW(parse_shape("gemm", "64x32"), InputError);
  EXPECT_THROW(parse_shape("swiglu.fwd", "64xx32"), InputError);
  EXPECT_THROW(parse_shape("swiglu.fwd", "0x32"), InputError);
  EXPECT_THROW(make_target("adamw", {4, 4}, hw), InputError);
  EXPECT_THROW(make_target("gemm", {4, 4, 4}, hw, "bf16"), InputError);
  TuneTarget t = make_target("cross_entropy", {512, 32768}, hw);
  EXPECT_EQ(t.shape_class, "512x32768");
  EXPECT_EQ(t.size(), 8u * 6u);
  Config c = t.config_at(t.index_of({{"block_elems", 16384}, {"vocab_tile", 4000}}));
  EXPECT_EQ(c["block_elems"], 16384);
  EXPECT_EQ(c["vocab_tile"], 4096);  // the nearest candidate
}

TEST(Target, WorkSplitKernelsTakeTheirDimensionsAndTheKernelsShapeClass) {
  AuraHardware hw = test_machine();
  EXPECT_EQ(parse_shape("rope.fwd", "2048x8x128"), (std::vector<int64_t>{2048, 8, 128}));
  EXPECT_THROW(parse_shape("rope.fwd", "2048x1024"), InputError);
  EXPECT_THROW(parse_shape("kv_compress.fwd", "2048x128x1"), InputError);   // ratio below 2
  EXPECT_THROW(parse_shape("mhc.post_fwd", "2048x9x512"), InputError);      // 9 streams
  EXPECT_THROW(make_target("kv_compress.bwd", {64, 64, 4}, hw, "bf16"), InputError);
  TuneTarget m = make_target("mhc.post_fwd", {2000, 4, 512}, hw);
  EXPECT_EQ(m.dtype, "fp32");  // the model's mHC storage (model/transformer.cc): what a tune measures
  EXPECT_EQ(m.bytes_in, 4.0 * (2000 * 4 * 512 + 2000 * 512));
  TuneTarget mb = make_target("mhc.post_fwd", {2000, 4, 512}, hw, "bf16");  // the suite's other case
  EXPECT_EQ(mb.dtype, "bf16");
  EXPECT_EQ(mb.bytes_in, m.bytes_in / 2);
  EXPECT_EQ(m.shape_class, kernels::shape_class({2000, 4, 512}));
  EXPECT_EQ(builtin_config(m, hw).at("block_tokens"), 8);
  TuneTarget sa = make_target("sparse_attention.bwd", {2048, 8, 128}, hw);
  EXPECT_EQ(builtin_config(sa, hw), (Config{{"chunks", 16}}));
  EXPECT_EQ(sa.shape_class, kernels::shape_class({2048, 8, 128}));
  TuneTarget p = make_target("mhc.pre_bwd", {2048, 4, 512}, hw);
  EXPECT_EQ(builtin_config(p, hw), (Config{{"block_tokens", 16},
                                          {"column_block", kernels::builtin::value("mhc.pre_bwd", "column_block")}}));
  // One job for two threads idles one of them: where the channel blocks are the backward's only
  // split (ratio 128 below 2^18 floats per input), the model never picks a block that covers
  // the whole head.
  TuneTarget kv = make_target("kv_compress.bwd", {2048, 64, 128}, hw);
  ChoiceProblem pr = performance_model(kv, hw);
  ChoiceSolution s = solve_choices(pr);
  ASSERT_TRUE(s.feasible);
  EXPECT_LT(kv.config_at(s.index).at("channel_block"), 64);
  std::vector<int> arg;
  EXPECT_NEAR(s.objective, brute_force(pr, &arg), 1e-12);
}

// Ratio 4's backward (kv_compressor.cc backward_r4_chunks, session 22) hands the pool one item
// per chunk of 64 entries and channel block: its jobs are chunks x blocks, so a block of the
// whole head (the kernel's untuned split) keeps both threads busy where there are two chunks.
TEST(Target, KvCompressRatio4BackwardCountsChunksTimesBlocks) {
  AuraHardware hw = test_machine();
  hw.threads = 2;
  TuneTarget kv = make_target("kv_compress.bwd", {4096, 512, 4}, hw);  // 1024 entries: 16 chunks
  ASSERT_EQ(kv.space.size(), 1u);
  ChoiceProblem pr = performance_model(kv, hw);
  for (size_t v = 0; v < pr.params[0].values.size(); ++v) {
    const int64_t cb = kv.space[0].values[v], jobs = 16 * ((512 + cb - 1) / cb);  // even: no imbalance
    EXPECT_NEAR(pr.params[0].cost[v], double(jobs) * 1e-6 / 2, 1e-15) << "channel_block " << cb;
  }
  ChoiceSolution s = solve_choices(pr);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(kv.config_at(s.index).at("channel_block"), 512);  // fewest jobs, both threads busy
  // 75 entries: chunks of 64 and 11; a block of 24 covers the 17 channels: 2 jobs, one a thread.
  TuneTarget odd = make_target("kv_compress.bwd", {300, 17, 4}, hw);
  ChoiceProblem po = performance_model(odd, hw);
  ASSERT_EQ(odd.space[0].values.back(), 24);
  EXPECT_NEAR(po.params[0].cost.back(), 2 * 1e-6 / 2, 1e-15);
}

// The kv_compress backward on AVX-512 rows, ratio != 4, from 2^18 floats per input, splits by
// entries when no channel_block is tuned, and any tuned channel_block forces the channel-block
// split (kv_compressor.cc, session 13). So there channel_block 0 (the kernel's own split) is in
// the space and is the built-in: a tune measures the kernel as it runs untuned, and writes 0
// unless a channel block beats it. Elsewhere the space is as before and the built-in is 64 (ratio
// 4: the whole head, TheBuiltinIsWhatTheKernelsDoUntuned).
TEST(Target, KvCompressBackwardByEntriesHasTheKernelsOwnSplitAsItsBuiltin) {
  AuraHardware hw = test_machine();
  hw.threads = 2;
  const bool wide = kernels::row_isa() == core::Isa::kAvx512;
  TuneTarget kv = make_target("kv_compress.bwd", {8192, 512, 128}, hw);  // 8192 x 512 floats per input
  ASSERT_EQ(kv.space.size(), 1u);
  EXPECT_EQ(kv.space[0].values.front() == 0, wide);
  EXPECT_EQ(builtin_config(kv, hw).at("channel_block"), wide ? 0 : 64);
  if (wide) {
    // From the forward's statistics: one pool job per thread, each an equal range of every
    // entry's rows: 2 jobs x 1 us / 2 and no imbalance, with 64 entries or 65. A channel block
    // derives the statistics again: its max and sum passes read zt and kt once more (2 x 4 x
    // 8192 x 512 bytes from memory), and the model's start keeps the kernel's own split.
    ChoiceProblem pr = performance_model(kv, hw);
    EXPECT_NEAR(pr.params[0].cost[0], 2 * 1e-6 / 2, 1e-15);
    for (size_t v = 1; v < kv.space[0].values.size(); ++v)
      EXPECT_GE(pr.params[0].cost[v], 2 * 4.0 * 8192 * 512 / hw.bw_mem) << kv.space[0].values[v];
    ChoiceSolution s = solve_choices(pr);
    ASSERT_TRUE(s.feasible);
    EXPECT_EQ(s.index[0], 0);
    TuneTarget odd = make_target("kv_compress.bwd", {8320, 512, 128}, hw);
    ChoiceProblem po = performance_model(odd, hw);
    EXPECT_NEAR(po.params[0].cost[0], 2 * 1e-6 / 2, 1e-15);
  }
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
           {8192, 512, 4},     // ratio 4 keeps the channel blocks (one of the whole head)
           {2048, 64, 128}}) {  // 2048 x 64 floats: below 2^18, one job on the caller
    TuneTarget k = make_target("kv_compress.bwd", dims, hw);
    EXPECT_NE(k.space[0].values.front(), 0) << dims[0] << "x" << dims[1] << "x" << dims[2];
    EXPECT_EQ(builtin_config(k, hw).at("channel_block"), dims[2] == 4 ? 512 : 64);
  }
  kernels::ScopedRowIsa avx2(core::Isa::kAvx2);  // no AVX-512 rows: the channel blocks
  TuneTarget narrow = make_target("kv_compress.bwd", {8192, 512, 128}, hw);
  EXPECT_NE(narrow.space[0].values.front(), 0);
  EXPECT_EQ(builtin_config(narrow, hw).at("channel_block"), 64);
  TuneTarget fwd = make_target("kv_compress.fwd", {8192, 512, 128}, hw);  // no AVX-512 rows: chunks
  EXPECT_NE(fwd.space[0].values.front(), 0);
  EXPECT_EQ(builtin_config(fwd, hw).at("channel_block"), 64);
}

// The kv_compress forward on AVX-512 rows at ratio != 4 takes whole entries one at a time, two in
// flight per thread, when no channel_block is tuned (kv_compressor.cc forward_pipelined512,
// session 27), and a tuned channel_block forces the chunks of items, 1.2-1.8x slower where
// measured. So there channel_block 0 is in the space and is the built-in: a tune measures what the
// kernel runs untuned and writes a block only if one beats it. Its cost: one pool job per thread,
// 2 x 1 us / 2, and 64 equal entries over two threads. Ratio 4 and AVX2 rows keep the chunks.
TEST(Target, KvCompressForwardByEntriesHasTheKernelsOwnSplitAsItsBuiltin) {
  AuraHardware hw = test_machine();
  hw.threads = 2;
  const bool wide = kernels::row_isa() == core::Isa::kAvx512;
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{8192, 512, 128}, {2048, 128, 128}, {300, 17, 8}}) {
    TuneTarget kv = make_target("kv_compress.fwd", dims, hw);
    ASSERT_EQ(kv.space.size(), 1u);
    EXPECT_EQ(kv.space[0].values.front() == 0, wide) << dims[0] << "x" << dims[1] << "x" << dims[2];
    EXPECT_EQ(builtin_config(kv, hw).at("channel_block"), wide ? 0 : 64);
  }
  if (wide) {
    ChoiceProblem pr = performance_model(make_target("kv_compress.fwd", {8192, 512, 128}, hw), hw);
    EXPECT_NEAR(pr.params[0].cost[0], 2 * 1e-6 / 2, 1e-15);
    EXPECT_TRUE(solve_choices(pr).feasible);
  }
  TuneTarget r4 = make_target("kv_compress.fwd", {4096, 512, 4}, hw);
  EXPECT_NE(r4.space[0].values.front(), 0);
  EXPECT_EQ(builtin_config(r4, hw).at("channel_block"), 64);
}

// A tuning entry serves a whole shape class (kernels/tuning.cc shape_class), and any
// channel_block it sets forces the channel-block split on every member. Class 2048x128x128 holds
// [1500, 100, 128] (150,000 floats per input: channel blocks untuned) and the model's
// [2048, 128, 128] (exactly 2^18: split by entries untuned, 0.30 ms vs 0.83 ms forced): a tune at
// the smaller shape may write only 0, the kernel's own choice at each member, so no value its
// space offers forces the slower split on the class's largest member.
TEST(Target, KvCompressBackwardNeverWritesABlockThatForcesTheChannelSplitOnAClassMate) {
  AuraHardware hw = test_machine();
  hw.threads = 2;
  ASSERT_EQ(kernels::shape_class({1500, 100, 128}), kernels::shape_class({2048, 128, 128}));
  const bool wide = kernels::row_isa() == core::Isa::kAvx512;
  TuneTarget small = make_target("kv_compress.bwd", {1500, 100, 128}, hw);
  TuneTarget large = make_target("kv_compress.bwd", {2048, 128, 128}, hw);
  ASSERT_EQ(small.space.size(), 1u);
  // The largest member splits by entries untuned (0 is its built-in) exactly on AVX-512 rows.
  EXPECT_EQ(large.space[0].values.front() == 0, wide);
  EXPECT_EQ(builtin_config(large, hw).at("channel_block"), wide ? 0 : 64);
  if (wide) {
    // Every value a tune at the smaller member can write keeps the largest member's own split.
    for (int64_t v : small.space[0].values) EXPECT_EQ(v, 0) << "channel_block " << v << " at 1500x100x128";
    EXPECT_EQ(builtin_config(small, hw).at("channel_block"), 0);
    // Its 0 runs blocks of 64 there (ceil(100 / 64) = 2 jobs), not the entry split's jobs: at two
    // threads, no imbalance, 2 jobs x 1 us / 2.
    ChoiceProblem pr = performance_model(small, hw);
    EXPECT_NEAR(pr.params[0].cost[0], 2 * 1e-6 / 2, 1e-15);
  }
  // A class wholly below 2^18 floats (1024x128x128: 2^17 at most) keeps its blocks and 64.
  TuneTarget below = make_target("kv_compress.bwd", {1000, 100, 128}, hw);
  EXPECT_NE(below.space[0].values.front(), 0);
  EXPECT_GT(below.space[0].values.size(), 1u);
  EXPECT_EQ(builtin_config(below, hw).at("channel_block"), 64);
  kernels::ScopedRowIsa avx2(core::Isa::kAvx2);  // no AVX-512 rows: channel blocks everywhere
  TuneTarget narrow = make_target("kv_compress.bwd", {1500, 100, 128}, hw);
  EXPECT_NE(narrow.space[0].values.front(), 0);
  EXPECT_EQ(builtin_config(narrow, hw).at("channel_block"), 64);
}

// The forward hands the pool its (entry, channel block) items in chunks (ratio 4: 64 since
// session 25), so its jobs are ceil(items / 64), not items: at one thread (no imbalance) each
// value costs jobs x 1 us.
TEST(Target, KvCompressForwardCountsChunksOfItemsAsJobs) {
  AuraHardware hw = test_machine();
  hw.threads = 1;
  TuneTarget kv = make_target("kv_compress.fwd", {2048, 128, 4}, hw);
  ChoiceProblem pr = performance_model(kv, hw);
  ASSERT_EQ(pr.params.size(), 1u);
  const int64_t entries = kernels::compressor_entries(2048, 4);  // 512
  for (size_t v = 0; v < pr.params[0].values.size(); ++v) {
    const int64_t blocks = (128 + pr.params[0].values[v] - 1) / pr.params[0].values[v];
    const double jobs = double((entries * blocks + 63) / 64);  // channel_block 8: 512 x 16 / 64 = 128
    EXPECT_NEAR(pr.params[0].cost[v], jobs * 1e-6, 1e-15) << "channel_block " << pr.params[0].values[v];
  }
}

// A sparse attention query scores more keys as its position grows (the window and the visible
// compressed entries fill up), so equal token chunks are unequal jobs; the pool hands them out in
// order, each to the first free thread, and the backward hands its chunks out last first. At two
// threads one chunk per thread leaves the first thread idle while the second finishes the
// heavier late tokens (session 12's idle two-thread table: chunks=2 1.10-1.30x of the best at 512
// and 1024 tokens, 12-16 chunks best). Each chunk also zeroes its private key-gradient slice and
// the reduction reads it back: 8 bytes per workspace float.
TEST(Target, SparseAttentionJobsGrowWithTheTokenPositionAndThePoolHandsThemOutInOrder) {
  AuraHardware hw = test_machine();  // two threads, L2 2 x 512 KiB, L3 32 MiB
  TuneTarget sa = make_target("sparse_attention.bwd", {512, 8, 128}, hw);
  ChoiceProblem pr = performance_model(sa, hw);
  ASSERT_EQ(pr.params.size(), 1u);
  const double busy = std::max(pr.pipe_constant[0], pr.pipe_constant[1]);
  auto cost_in = [](const ChoiceProblem& p, int64_t value) {
    for (size_t v = 0; v < p.params[0].values.size(); ++v)
      if (p.params[0].values[v] == value) return p.params[0].cost[v];
    ADD_FAILURE() << "no value " << value;
    return 0.0;
  };
  // Workspace of c chunks of len = 512 / c tokens at ratio 4 (128 compressed entries; chunk k
  // zeroes the (k + 1) len / 4 rows its tokens can reach): c ((len + 63) 128 + 8) floats plus
  // 128 per reachable row. 2 chunks: 106256 floats (425 KB), 4: 138784 (555 KB), both in the two
  // L2s (2 x 200 GB/s); 16: 333952 (1.34 MB), in L3 (min(2 x 90, 4 x 30) GB/s).
  const double ws2 = 2 * 4.0 * 106256 / 400e9, ws4 = 2 * 4.0 * 138784 / 400e9, ws16 = 2 * 4.0 * 333952 / 120e9;
  // Keys per query t: min(64, t + 1) + min(64, (t + 1) / 4); 55264 over the 512 tokens.
  // Two chunks of 256 tokens: 22496 and 32768 keys, one per thread.
  EXPECT_NEAR(cost_in(pr, 2), 2 * 1e-6 / 2 + (32768.0 * 2 / 55264 - 1) * busy + ws2, 1e-12);
  // Four of 128: 8192, 14304, 16384, 16384, handed out last first: the threads take 16384 each,
  // then thread 0, free first, 14304 and thread 1 8192.
  EXPECT_NEAR(cost_in(pr, 4), 4 * 1e-6 / 2 + ((14304.0 + 16384) * 2 / 55264 - 1) * busy + ws4, 1e-12);
  // Sixteen of 32 tokens: the last first balance to within a chunk.
  EXPECT_GT(cost_in(pr, 16), 16 * 1e-6 / 2 + ws16 - 1e-12);
  EXPECT_GT(sa.config_at(solve_choices(pr).index).at("chunks"), 4);
  // The forward (kernels::sparse_attention_forward_split): 8 blocks of 64 tokens (2576, 5616,
  // 6640, 7664, then 8192 keys each), thread 0 from block 0, thread 1 from block 4, each claiming
  // its next block as it starts one. Pieces of 128 (a block each, 8 pieces): thread 0 starts
  // block 3 after 14832 keys, before thread 1 starts block 6 (16384), so it claims block 7 and
  // ends at 22496 + 8192 = 30688 against thread 1's 24576.
  TuneTarget fwd = make_target("sparse_attention.fwd", {512, 8, 128}, hw);
  ChoiceProblem pf = performance_model(fwd, hw);
  const double fbusy = std::max(pf.pipe_constant[0], pf.pipe_constant[1]);
  EXPECT_NEAR(cost_in(pf, 128), 8 * 0.2e-6 / 2 + (30688.0 * 2 / 55264 - 1) * fbusy, 1e-12);
  EXPECT_NEAR(cost_in(pf, 64), 8 * 0.2e-6 / 2 + (30688.0 * 2 / 55264 - 1) * fbusy, 1e-12);
  // Pieces of 4 tokens (16 a block, 128 pieces): thread 1 finishes blocks 4-6 and takes block
  // 7's pieces beside thread 0; they end at 27616 and 27648 keys, within a piece (512 keys).
  EXPECT_NEAR(cost_in(pf, 4), 128 * 0.2e-6 / 2 + (27648.0 * 2 / 55264 - 1) * fbusy, 1e-12);
  EXPECT_LT(fwd.config_at(solve_choices(pf).index).at("query_block"), 128);
  // One thread has no imbalance: each value costs its jobs x 1 us and its workspace traffic
  // (one L2 of 200 GB/s up to 512 KiB, else L3 at 90 GB/s), and one chunk wins.
  hw.threads = 1;
  TuneTarget one = make_target("sparse_attention.bwd", {512, 8, 128}, hw);
  ChoiceProblem p1 = performance_model(one, hw);
  EXPECT_NEAR(cost_in(p1, 1), 1e-6 + 2 * 4.0 * 89992 / 200e9, 1e-15);   // 360 KB
  EXPECT_NEAR(cost_in(p1, 4), 4e-6 + 2 * 4.0 * 138784 / 90e9, 1e-15);   // 555 KB
  EXPECT_EQ(one.config_at(solve_choices(p1).index).at("chunks"), 1);
}

// The forward's query_block is priced by the kernel's own split (sparse_attention_forward runs
// by kernels::sparse_attention_forward_split): one thread pays 0.2 us per piece the split makes
// (session 24's piece_cost.log: not told apart from zero; a pool job is priced 1 us), and more threads run those pieces with the threads ending within a piece of each other
// once each has several blocks. Session 24 found the model still pricing the split the kernel
// had dropped sessions before (whole blocks over three quarters of the tokens, then query blocks).
TEST(Target, SparseAttentionForwardIsPricedByTheKernelsOwnSplit) {
  AuraHardware one = test_machine();
  one.threads = 1;
  AuraHardware two = test_machine();
  for (int64_t tokens : {100, 512, 1000, 2048}) {
    for (int64_t ratio : {0, 4, 128}) {
      const std::vector<int64_t> dims = {tokens, 8, 128, ratio};
      ChoiceProblem p1 = performance_model(make_target("sparse_attention.fwd", dims, one), one);
      ChoiceProblem p2 = performance_model(make_target("sparse_attention.fwd", dims, two), two);
      ASSERT_EQ(p1.params.size(), 1u);
      ASSERT_EQ(p1.params[0].values, p2.params[0].values);
      const double busy2 = std::max(p2.pipe_constant[0], p2.pipe_constant[1]);
      for (size_t v = 0; v < p1.params[0].values.size(); ++v) {
        const int64_t qb = p1.params[0].values[v];
        const kernels::SparseAttnForwardSplit sp = kernels::sparse_attention_forward_split(tokens, 64, qb);
        EXPECT_EQ(sp.block_tokens, 64);
        EXPECT_NEAR(p1.params[0].cost[v], double(sp.pieces()) * 0.2e-6, 1e-15) << tokens << " " << ratio << " " << qb;
        // Two threads: the pieces shared, and an imbalance no larger than one thread doing all.
        const double imb = (p2.params[0].cost[v] - double(sp.pieces()) * 0.2e-6 / 2) / busy2 + 1;
        EXPECT_GE(imb, 1 - 1e-12) << tokens << " " << ratio << " " << qb;
        EXPECT_LE(imb, 2 + 1e-12) << tokens << " " << ratio << " " << qb;
        // At least two blocks a thread and pieces of at most 4 tokens: within a piece of each
        // other, a piece at most 4 x 128 keys of the total's half.
        if (sp.blocks >= 4 && qb <= 4) {
          double total = 0;
          for (int64_t t = 0; t < tokens; ++t)
            total += double(std::min<int64_t>(64, t + 1)) +
                     (ratio == 0 ? 0.0 : ratio == 128 ? double((t + 1) / 128)
                                                      : double(std::min<int64_t>(std::min<int64_t>(64, tokens / 4), (t + 1) / 4)));
          EXPECT_LE(imb, 1 + 4 * 128 * 2 / total + 1e-12) << tokens << " " << ratio << " " << qb;
        }
      }
    }
  }
}

// The step's sparse attention layers come in three kinds (v4-micro: compress_ratios 0, 4 and
// 128, the MTP block 0), which the kernels' tuning lookup does not tell apart: tokens, heads
// and head_dim are the class. A tune names the kind as an optional fourth dimension and writes
// the entry for the one class all three share.
TEST(Target, SparseAttentionTakesTheLayersRatioAndKeepsTheKernelsShapeClass) {
  AuraHardware hw = test_machine();
  EXPECT_EQ(parse_shape("sparse_attention.bwd", "2048x8x128x0"), (std::vector<int64_t>{2048, 8, 128, 0}));
  EXPECT_EQ(parse_shape("sparse_attention.fwd", "2048x8x128x128"), (std::vector<int64_t>{2048, 8, 128, 128}));
  EXPECT_EQ(parse_shape("sparse_attention.fwd", "2048x8x128x4"), (std::vector<int64_t>{2048, 8, 128}));  // the default
  EXPECT_EQ(parse_shape("sparse_attention.fwd", "2048x8x128"), (std::vector<int64_t>{2048, 8, 128}));
  EXPECT_THROW(parse_shape("sparse_attention.fwd", "2048x8x128x16"), InputError);  // no such layer
  EXPECT_THROW(parse_shape("sparse_attention.fwd", "2048x8x128x4x4"), InputError);
  EXPECT_THROW(parse_shape("rope.fwd", "2048x8x128x0"), InputError);               // rope has no ratio
  EXPECT_THROW(make_target("sparse_attention.fwd", {2048, 8, 128, 16}, hw), InputError);
  EXPECT_THROW(make_target("rope.fwd", {2048, 8, 128, 0}, hw), InputError);
  const std::string cls = kernels::shape_class({2048, 8, 128});
  double flops[3] = {0, 0, 0}, workspace[3] = {0, 0, 0};
  const int64_t ratios[3] = {0, 4, 128};
  AuraHardware one = hw;
  one.threads = 1;  // no imbalance: chunks 16 cost 16 us and their workspace traffic
  for (int i = 0; i < 3; ++i) {
    TuneTarget f = make_target("sparse_attention.fwd", {2048, 8, 128, ratios[i]}, hw);
    TuneTarget b = make_target("sparse_attention.bwd", {2048, 8, 128, ratios[i]}, hw);
    EXPECT_EQ(f.shape_class, cls) << ratios[i];
    EXPECT_EQ(b.shape_class, cls) << ratios[i];
    EXPECT_EQ(builtin_config(b, hw), (Config{{"chunks", 16}}));
    EXPECT_EQ(b.flops, 2.5 * f.flops);  // 10 against 4 hd FLOPs per (head, key)
    flops[i] = f.flops;
    ChoiceProblem pb = performance_model(make_target("sparse_attention.bwd", {2048, 8, 128, ratios[i]}, one), one);
    ASSERT_EQ(pb.params[0].values.back(), 16);
    workspace[i] = pb.params[0].cost.back() - 16e-6;
  }
  // Keys: the window, sum min(64, t + 1) = 64 x 2048 - 2016 = 129056; ratio 128 adds
  // sum (t + 1) / 128 over t < 2048 = 128 x (0 + 1 + ... + 15) + 16 = 15376; ratio 4 counts every
  // query full, 2048 x 128.
  EXPECT_EQ(flops[0], 4.0 * 8 * 128 * 129056);
  EXPECT_EQ(flops[2], 4.0 * 8 * 128 * (129056 + 15376));
  EXPECT_EQ(flops[1], 4.0 * 8 * 128 * 2048 * 128);
  // 16 chunks of 128 tokens, (128 + 63) 128 + 8 floats each and 128 per compressed row chunk k
  // can reach ((k + 1) 128 / ratio: ratio 4 32 + 64 + ... + 512 = 4352 rows, ratio 128 136), in
  // L3 (90 GB/s): ratio 4's workspace is 2.4x the window's.
  EXPECT_NEAR(workspace[0], 2 * 4.0 * 391296 / 90e9, 1e-12);
  EXPECT_NEAR(workspace[1], 2 * 4.0 * 948352 / 90e9, 1e-12);
  EXPECT_NEAR(workspace[2], 2 * 4.0 * 408704 / 90e9, 1e-12);
}

TEST(Target, EverySpaceHoldsOnlyLegalValues) {
  AuraHardware hw = test_machine();
  for (const std::string& k : kernels::tunable_kernels()) {
    TuneTarget t = make_target(k, parse_shape(k, ""), hw);
    // One point only where the kernel reads none of its parameters at that size (mHC's backward
    // by tokens on AVX-512 rows: Target.MhcBackwardByTokensHasTheBuiltinsOnePoint).
    if (t.fixed.empty()) ASSERT_GT(t.size(), 1u) << k;
    else ASSERT_EQ(t.size(), 1u) << k << ": " << t.fixed;
    for (const SpaceParam& p : t.space)
      for (int64_t v : p.values) EXPECT_NO_THROW(kernels::check_param(k, p.name, v)) << k << "." << p.name << "=" << v;
    Config b = builtin_config(t, hw);
    EXPECT_EQ(b.size(), t.space.size()) << k;
    ChoiceSolution s = solve_choices(performance_model(t, hw));
    EXPECT_TRUE(s.feasible) << k;
  }
}

// "The built-in" that a tune measures and compares against is what each kernel does with no
// tuning entry: the kernels' own defaults (kernels/tuning_builtins.h), never a copy of them.
TEST(Target, TheBuiltinIsWhatTheKernelsDoUntuned) {
  AuraHardware hw = test_machine();
  for (const std::string& k : kernels::tunable_kernels()) {
    TuneTarget t = make_target(k, parse_shape(k, ""), hw);
    Config b = builtin_config(t, hw);
    for (const SpaceParam& p : t.space) {
      const int64_t v = kernels::builtin::value(k, p.name);
      if (v == 0) continue;  // derived from the shape or the caches (GEMM, stream, vocab_tile)
      EXPECT_EQ(b.at(p.name), v) << k << "." << p.name << ": the built-in must be in the space";
    }
  }
  // The row kernels' block depends on the call's shape (builtin::row_block_elems, 0 from
  // builtin::value; RoPE's rows are heads x head_dim): the target's built-in is the kernels' block.
  for (const auto& [k, dims, want] : std::vector<std::tuple<std::string, std::vector<int64_t>, int64_t>>{
           {"swiglu.fwd", {4096, 4096}, 262144}, {"cross_entropy", {512, 32768}, 262144},
           {"rmsnorm.fwd", {64, 4096}, 16384}, {"swiglu.bwd", {256, 4096}, 65536},
           {"rope.fwd", {4096, 8, 512}, 262144}, {"rope.fwd", {256, 8, 512}, 65536}}) {
    EXPECT_EQ(kernels::builtin::value(k, "block_elems"), 0) << k;
    EXPECT_EQ(builtin_config(make_target(k, dims, hw), hw).at("block_elems"), want) << k;
    EXPECT_EQ(kernels::builtin::row_block_elems(dims[0], dims.size() == 3 ? dims[1] * dims[2] : dims[1]), want) << k;
  }
  // The kv_compress backward's built-in depends on the shape (builtin::value gives 0 for it):
  // ratio 4 one block of the whole head (kv_backward_channel_block), in the space at any head
  // dim, rounded up to its multiple of 8 (17 channels: 24, one block as the kernel's); ratio 128
  // below the split by entries blocks of 64.
  EXPECT_EQ(kernels::builtin::value("kv_compress.bwd", "channel_block"), 0);
  for (const auto& [dims, want] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{2048, 128, 4}, 128}, {{4096, 512, 4}, 512}, {{1024, 1024, 4}, 1024}, {{300, 17, 4}, 24},
           {{1000, 100, 128}, 64}}) {
    TuneTarget kv = make_target("kv_compress.bwd", dims, hw);
    EXPECT_EQ(builtin_config(kv, hw).at("channel_block"), want) << dims[0] << "x" << dims[1] << "x" << dims[2];
    if (dims[2] == 4) {
      EXPECT_EQ(want, (kernels::builtin::kv_backward_channel_block(dims[1], 4) + 7) / 8 * 8);
    }
  }
  // The mHC stage-2 column block follows the instruction-set path the kernel takes.
  {
    kernels::ScopedRowIsa avx2(core::Isa::kAvx2);
    TuneTarget p = make_target("mhc.head_bwd", {2048, 4, 512}, hw);
    EXPECT_EQ(builtin_config(p, hw).at("column_block"), kernels::builtin::kMhcColumnBlock);
  }
  if (core::isa_supported(core::Isa::kAvx512)) {
    TuneTarget p = make_target("mhc.head_bwd", {2048, 4, 512}, hw);
    EXPECT_EQ(builtin_config(p, hw).at("column_block"), kernels::builtin::kMhcFusedColumnBlock);
  }
  // The row kernels stream by default per output tensor of at least 8 MiB: SwiGLU backward's
  // two 4 MiB outputs at 256x4096 fp32 do not stream, though together they pass 8 MiB.
  EXPECT_EQ(builtin_config(make_target("swiglu.bwd", {256, 4096}, hw), hw).at("stream"), 1);
  EXPECT_EQ(builtin_config(make_target("swiglu.bwd", {512, 4096}, hw), hw).at("stream"), 2);
  EXPECT_EQ(builtin_config(make_target("rmsnorm.fwd", {1024, 4096}, hw, "bf16"), hw).at("stream"), 2);
  EXPECT_EQ(builtin_config(make_target("rmsnorm.fwd", {512, 4096}, hw, "bf16"), hw).at("stream"), 1);
}

TEST(Diagnose, NamesTheLimitingStage) {
  AuraHardware hw = test_machine();
  TuneTarget g = make_target("gemm", {1024, 1024, 1024}, hw);
  Diagnosis d = diagnose(g, hw, g.flops / hw.peak_flops / 0.9);
  EXPECT_EQ(d.regime, "compute");
  EXPECT_NEAR(d.compute, 0.9, 1e-9);
  TuneTarget r = make_target("rmsnorm.fwd", {8192, 8192}, hw);
  d = diagnose(r, hw, (r.bytes_in + r.bytes_out) / hw.bw_mem);
  EXPECT_EQ(d.regime, "load");
  EXPECT_EQ(d.level, "memory");
  EXPECT_FALSE(d.levers.empty());
  d = diagnose(r, hw, 100 * (r.bytes_in + r.bytes_out) / hw.bw_mem);
  EXPECT_EQ(d.regime, "latency");
}

// mHC's pre and head backward on AVX-512 rows with at least one 256-token chunk per thread run by
// tokens (kernels/mhc.cc) and read neither block_tokens nor column_block: the target's space is
// the built-in's one point, with the reason, so a tune has nothing to measure noise on. With
// fewer chunks than threads, or without AVX-512 rows, the column path reads both: the whole
// space. (Reviewer 3, session 12: the targets kept searching both after the token path landed.)
TEST(Target, MhcBackwardByTokensHasTheBuiltinsOnePoint) {
  AuraHardware hw = test_machine();  // two threads
  for (const std::string k : {"mhc.pre_bwd", "mhc.head_bwd"}) {
    {
      kernels::ScopedRowIsa avx2(core::Isa::kAvx2);
      const TuneTarget t = make_target(k, {2048, 4, 512}, hw);
      EXPECT_TRUE(t.fixed.empty()) << k;
      EXPECT_EQ(t.size(), 8u * 6u) << k << ": block_tokens x column_block on the column path";
    }
    if (!core::isa_supported(core::Isa::kAvx512)) {  // the rows never run AVX-512 here
      EXPECT_TRUE(make_target(k, {512, 4, 512}, hw).fixed.empty()) << k;
      continue;
    }
    kernels::ScopedRowIsa avx512(core::Isa::kAvx512);
    // 512 tokens: two chunks for two threads, the token path.
    const TuneTarget t = make_target(k, {512, 4, 512}, hw);
    EXPECT_EQ(t.size(), 1u) << k;
    EXPECT_NE(t.fixed.find("block_tokens and column_block are not read"), std::string::npos) << t.fixed;
    EXPECT_EQ(t.config_at({0, 0}), builtin_config(t, hw)) << k;
    EXPECT_EQ(t.config_at({0, 0}).at("column_block"), kernels::builtin::kMhcFusedColumnBlock) << k;
    ChoiceSolution s = solve_choices(performance_model(t, hw));
    ASSERT_TRUE(s.feasible) << k;
    EXPECT_EQ(t.config_at(s.index), builtin_config(t, hw)) << k;
    // 256 tokens: one chunk for two threads, the column path.
    const TuneTarget few = make_target(k, {256, 4, 512}, hw);
    EXPECT_TRUE(few.fixed.empty()) << k;
    EXPECT_GT(few.size(), 1u) << k;
    // One thread: one chunk suffices.
    AuraHardware one = hw;
    one.threads = 1;
    EXPECT_EQ(make_target(k, {256, 4, 512}, one).size(), 1u) << k;
    // The bench's scope keeps the whole space (its tables hold it).
    ScopedEveryPath every;
    const TuneTarget whole = make_target(k, {512, 4, 512}, hw);
    EXPECT_TRUE(whole.fixed.empty()) << k;
    EXPECT_EQ(whole.size(), few.size()) << k;
  }
  // The forward kernels are not affected.
  kernels::ScopedRowIsa avx512(core::Isa::kAvx512);
  EXPECT_GT(make_target("mhc.pre_fwd", {4096, 4, 512}, hw).size(), 1u);
}

}  // namespace
}  // namespace trex::aura
