// KV compressor pooling: fused vs the eager chain for ratio 4 (overlapping) and 128 (disjoint)
// plus an odd ratio, odd head dims and trailing partial blocks; gating (poisoned outputs, inputs
// unchanged); finite differences of dkt, dzt and dape; bit-identical results for 1-3 threads
// and for every vector path the CPU has (AVX2, AVX-512: row_isa.h); the backward from the
// forward's kept statistics gives the same bits as the one that derives them.
//
// Tolerance 1e-4 (atol = rtol, fp32 in both; they differ in exp (Cephes polynomial vs libm,
// ~2 ulp) and summation order only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "grad_check.h"
#include "kernel_test_util.h"
#include "trex/core/arena.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/kv_compressor.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/tuning.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

struct CompShape {
  int64_t s, hd;
  int ratio;
};
// {300, 9, 4}: 75 entries, two of ratio 4's chunks of 64 (dape summed per chunk, then over chunks).
const CompShape kShapes[] = {{8, 4, 4},      {13, 5, 4},    {3, 8, 4},  {23, 16, 4},   {41, 33, 4},
                             {300, 17, 128}, {256, 8, 128}, {9, 3, 2},  {130, 24, 128}, {300, 9, 4}};

struct Inputs {
  std::vector<float> kt, zt, ape, dk;
};
Inputs make_inputs(const CompShape& c, uint32_t seed, int dist) {
  int64_t C = compressor_width(c.ratio, c.hd), n = compressor_entries(c.s, c.ratio);
  return {random_vec<float>(c.s * C, seed, dist), random_vec<float>(c.s * C, seed + 1, dist, 2.f),
          random_vec<float>(c.ratio * C, seed + 2, 0, 0.5f),
          random_vec<float>(n * c.hd, seed + 3, 0)};
}

void check_against_ref() {
  core::ThreadPool pool(2);
  uint32_t seed = 3;
  for (const CompShape& c : kShapes) {
    for (int dist = 0; dist < 4; ++dist, seed += 10) {
      std::string tag = "s " + std::to_string(c.s) + " hd " + std::to_string(c.hd) + " ratio " +
                        std::to_string(c.ratio) + " dist " + std::to_string(dist);
      Inputs in = make_inputs(c, seed, dist);
      Inputs in0 = in;
      int64_t C = compressor_width(c.ratio, c.hd), n = compressor_entries(c.s, c.ratio);
      std::vector<float> k(static_cast<size_t>(n * c.hd), NAN), kr = k;
      std::vector<float> dkt(static_cast<size_t>(c.s * C), NAN), dzt = dkt, dktr = dkt, dztr = dkt;
      std::vector<float> dape(static_cast<size_t>(c.ratio * C), NAN), daper = dape;
      kv_compress_forward(in.kt.data(), in.zt.data(), in.ape.data(), k.data(), c.s, c.hd, c.ratio,
                          &pool);
      kv_compress_forward_ref(in.kt.data(), in.zt.data(), in.ape.data(), kr.data(), c.s, c.hd,
                              c.ratio, &pool);
      kv_compress_backward(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(), dkt.data(),
                           dzt.data(), dape.data(), c.s, c.hd, c.ratio, &pool);
      kv_compress_backward_ref(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(),
                               dktr.data(), dztr.data(), daper.data(), c.s, c.hd, c.ratio, &pool);
      EXPECT_TRUE(same_bytes(in.kt, in0.kt) && same_bytes(in.zt, in0.zt) &&
                  same_bytes(in.ape, in0.ape) && same_bytes(in.dk, in0.dk))
          << tag << ": an input changed";
      for (const auto* v : {&k, &dkt, &dzt, &dape})
        for (float x : *v) ASSERT_FALSE(std::isnan(x)) << tag << ": an output was not written";
      expect_close(k, kr, 1e-4, tag + " k");
      expect_close(dkt, dktr, 1e-4, tag + " dkt");
      expect_close(dzt, dztr, 1e-4, tag + " dzt");
      expect_close(dape, daper, 1e-4, tag + " dape");
    }
  }
}

TEST(KvCompressor, MatchesReference) {
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    check_against_ref();
  }
}

TEST(KvCompressor, BackwardMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  for (CompShape c : {CompShape{14, 5, 4}, CompShape{260, 3, 128}, CompShape{7, 9, 2}}) {
    Inputs in = make_inputs(c, 21, 0);
    int64_t C = compressor_width(c.ratio, c.hd), n = compressor_entries(c.s, c.ratio);
    std::vector<float> dkt(static_cast<size_t>(c.s * C)), dzt = dkt;
    std::vector<float> dape(static_cast<size_t>(c.ratio * C));
    kv_compress_backward(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(), dkt.data(),
                         dzt.data(), dape.data(), c.s, c.hd, c.ratio, &pool);
    auto loss = [&] {
      std::vector<float> k(static_cast<size_t>(n * c.hd));
      kv_compress_forward(in.kt.data(), in.zt.data(), in.ape.data(), k.data(), c.s, c.hd, c.ratio,
                          &pool);
      return weighted_sum(k, in.dk, [](float v) { return v; });
    };
    std::string tag = "ratio " + std::to_string(c.ratio);
    expect_grad_matches_fd(tag + " dkt", in.kt.data(), c.s * C, dkt.data(), loss);
    expect_grad_matches_fd(tag + " dzt", in.zt.data(), c.s * C, dzt.data(), loss);
    expect_grad_matches_fd(tag + " dape", in.ape.data(), c.ratio * C, dape.data(), loss);
  }
}

// Also the same bits on every vector path: with head dims that are multiples of 8 (no scalar
// channel tail on the AVX2 path) the 8- and 64-channel walks do the same operations per channel.
// {1300, 520, 128} and {203, 520, 4}: 9 channel blocks per entry, so the forward's chunks of 16
// items (ratio 4: 64) split entries on the AVX2 path and ratio 4's AVX-512 walk (partial channel
// ranges; ratio 4's steps of 32 channels end in a partial one); untuned ratio != 4 on AVX-512
// takes whole entries, two in flight per thread (forward_pipelined512). Ratio 4's last step of 32 channels: hd 40 and 520 end in 8
// (the second vector off), hd 56 in 24 (the first vector full, the second partial). The paths
// compared are recorded as the test property "isas": where the CPU lacks AVX-512, only AVX2 ran.
// {1043, 40, 4}: 260 entries, ratio 4's chunks of 64 (the last one partial) taken by 1-3 threads.
TEST(KvCompressor, DeterministicAcrossThreadCountsAndPaths) {
  std::string compared;
  for (core::Isa isa : row_isas()) compared += std::string(compared.empty() ? "" : ",") + core::to_string(isa);
  ::testing::Test::RecordProperty("isas", compared);
  // {2100, 136, 126}: split by entries on AVX-512 (2^18 floats and more), 126 rows: groups of 4
  // rows and 2 left over, and an 8-lane channel tail, in every pass. (Head dims that are not a
  // multiple of 8 differ between the paths: the AVX2 path's last channels take the scalar
  // std::exp.)
  // {8200, 264, 128}: kt and zt over 16 MiB together (from memory, as the benchmarks' shapes),
  // 5 channel blocks per entry (the last of 8 channels), so the AVX2 forward's chunks of 16
  // items split entries (AVX-512: whole entries, requests ahead); 8 tokens past the last entry.
  for (CompShape c : {CompShape{203, 40, 4}, CompShape{520, 24, 128}, CompShape{1300, 520, 128},
                      CompShape{203, 520, 4}, CompShape{203, 56, 4}, CompShape{1043, 40, 4},
                      CompShape{2100, 136, 126}, CompShape{8200, 264, 128}}) {
    Inputs in = make_inputs(c, 5, 2);
    int64_t C = compressor_width(c.ratio, c.hd), n = compressor_entries(c.s, c.ratio);
    std::vector<float> ref;
    for (core::Isa isa : row_isas())
      for (int threads : {1, 2, 3}) {
        ScopedRowIsa path(isa);
        core::ThreadPool pool(threads);
        std::vector<float> k(static_cast<size_t>(n * c.hd)), dkt(static_cast<size_t>(c.s * C));
        std::vector<float> dzt = dkt, dape(static_cast<size_t>(c.ratio * C));
        kv_compress_forward(in.kt.data(), in.zt.data(), in.ape.data(), k.data(), c.s, c.hd,
                            c.ratio, &pool);
        kv_compress_backward(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(),
                             dkt.data(), dzt.data(), dape.data(), c.s, c.hd, c.ratio, &pool);
        std::vector<float> all = k;
        for (const auto* v : {&dkt, &dzt, &dape}) all.insert(all.end(), v->begin(), v->end());
        if (ref.empty()) ref = all;
        else
          EXPECT_TRUE(same_bytes(all, ref)) << core::to_string(isa) << ", " << threads << " threads";
      }
  }
}

// dkt and dzt of 8 MiB and more stream on the AVX-512 path when 64-byte aligned: the same bits
// as plain stores (outputs one element off the boundary) and as the AVX2 path, every position
// written (poisoned first), and the forward's chunked walk gives the AVX2 path's k (at ratio 4
// kt and zt exceed 16 MiB together: the forward's walk, and since session 30 the backward's,
// request their lines ahead).
TEST(KvCompressor, StreamingGradientsSameBits) {
  // hd 48: the ratio-4 backward's streaming variant ends on a partial step.
  for (CompShape c : {CompShape{16387, 64, 4}, CompShape{32771, 48, 4}, CompShape{32771, 64, 128}}) {
    SCOPED_TRACE("ratio " + std::to_string(c.ratio));
    Inputs in = make_inputs(c, 9, 1);
    const int64_t C = compressor_width(c.ratio, c.hd), n = compressor_entries(c.s, c.ratio);
    ASSERT_GE(c.s * C * int64_t(sizeof(float)), int64_t(8) << 20);
    auto dkt_buf = core::aligned_array<float>(size_t(c.s * C) + 16);
    auto dzt_buf = core::aligned_array<float>(size_t(c.s * C) + 16);
    std::vector<float> ref;
    core::ThreadPool pool(2);
    for (core::Isa isa : row_isas())
      for (size_t off : {size_t(0), size_t(1)}) {
        ScopedRowIsa path(isa);
        std::fill(dkt_buf.get(), dkt_buf.get() + c.s * C + 16, NAN);
        std::fill(dzt_buf.get(), dzt_buf.get() + c.s * C + 16, NAN);
        std::vector<float> k(static_cast<size_t>(n * c.hd), NAN), dape(static_cast<size_t>(c.ratio * C), NAN);
        kv_compress_forward(in.kt.data(), in.zt.data(), in.ape.data(), k.data(), c.s, c.hd, c.ratio, &pool);
        kv_compress_backward(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(), dkt_buf.get() + off,
                             dzt_buf.get() + off, dape.data(), c.s, c.hd, c.ratio, &pool);
        std::vector<float> all = k;
        all.insert(all.end(), dkt_buf.get() + off, dkt_buf.get() + off + c.s * C);
        all.insert(all.end(), dzt_buf.get() + off, dzt_buf.get() + off + c.s * C);
        all.insert(all.end(), dape.begin(), dape.end());
        for (size_t i = 0; i < all.size(); ++i) ASSERT_FALSE(std::isnan(all[i])) << "output " << i << " not written";
        if (ref.empty()) ref = all;
        else EXPECT_TRUE(same_bytes(all, ref)) << core::to_string(isa) << " offset " << off;
        if (c.ratio == 4) continue;  // ratio 4 keeps no statistics
        // The backward from the forward's statistics (the model's path; AVX-512: the split by
        // entries, whose gradient pass streams dkt and dzt at offset 0): the same bytes.
        const int64_t width = compressor_stats_width(c.ratio, c.hd);
        std::vector<float> ks(k.size(), NAN), stats(static_cast<size_t>(n * width), NAN), dapes(dape.size(), NAN);
        std::fill(dkt_buf.get(), dkt_buf.get() + c.s * C + 16, NAN);
        std::fill(dzt_buf.get(), dzt_buf.get() + c.s * C + 16, NAN);
        kv_compress_forward_keeping_stats(in.kt.data(), in.zt.data(), in.ape.data(), ks.data(), stats.data(), c.s,
                                          c.hd, c.ratio, &pool);
        kv_compress_backward_from_stats(in.kt.data(), in.zt.data(), in.ape.data(), stats.data(), in.dk.data(),
                                        dkt_buf.get() + off, dzt_buf.get() + off, dapes.data(), c.s, c.hd, c.ratio,
                                        &pool);
        std::vector<float> from_stats = ks;
        from_stats.insert(from_stats.end(), dkt_buf.get() + off, dkt_buf.get() + off + c.s * C);
        from_stats.insert(from_stats.end(), dzt_buf.get() + off, dzt_buf.get() + off + c.s * C);
        from_stats.insert(from_stats.end(), dapes.begin(), dapes.end());
        EXPECT_TRUE(same_bytes(from_stats, all)) << "from statistics, " << core::to_string(isa) << " offset " << off;
      }
  }
}

// Ratio 4's backward sums dape per chunk of entries, then over chunks, whatever the channel split:
// a tuned channel_block (work items of one chunk and one block) gives the untuned bits (one block
// of every channel), on 1 and 3 threads and every vector path.
TEST(KvCompressor, Ratio4BackwardSameBitsForAnyChannelBlock) {
  const CompShape c{1043, 40, 4};
  Inputs in = make_inputs(c, 11, 1);
  const int64_t C = compressor_width(c.ratio, c.hd);
  std::vector<float> ref;
  for (int64_t cb : {int64_t(0), int64_t(16), int64_t(24)})
    for (core::Isa isa : row_isas())
      for (int threads : {1, 3}) {
        auto t = std::make_shared<Tuning>();
        if (cb > 0) t->set("kv_compress.bwd", "*", {{"channel_block", cb}});
        set_active_tuning(cb > 0 ? t : nullptr);
        ScopedRowIsa path(isa);
        core::ThreadPool pool(threads);
        std::vector<float> dkt(static_cast<size_t>(c.s * C), NAN), dzt = dkt;
        std::vector<float> dape(static_cast<size_t>(c.ratio * C), NAN);
        kv_compress_backward(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(), dkt.data(),
                             dzt.data(), dape.data(), c.s, c.hd, c.ratio, &pool);
        set_active_tuning(nullptr);
        std::vector<float> all = dkt;
        all.insert(all.end(), dzt.begin(), dzt.end());
        all.insert(all.end(), dape.begin(), dape.end());
        for (float x : all) ASSERT_FALSE(std::isnan(x)) << "an output was not written";
        if (ref.empty()) ref = all;
        else
          EXPECT_TRUE(same_bytes(all, ref))
              << "channel_block " << cb << ", " << core::to_string(isa) << ", " << threads << " threads";
      }
}

// Untuned, the ratio != 4 forward on AVX-512 takes whole entries one at a time, two in flight per
// thread (the sum pass of one beside the max pass of the next); a tuned channel_block keeps the
// chunks of (entry, channel block) items. Both give the same bits, on 1 and 3 threads (3: claims
// interleave, so a thread's next entry is not always the one after). {2100, 136, 126}: groups of
// 4 rows and 2 left over, an 8-lane channel tail; {8200, 264, 128}: from memory (kt and zt over
// 16 MiB: the pipeline requests lines ahead).
TEST(KvCompressor, ForwardSameBitsForAnyChannelBlock) {
  for (CompShape c : {CompShape{2100, 136, 126}, CompShape{8200, 264, 128}}) {
    SCOPED_TRACE("ratio " + std::to_string(c.ratio));
    Inputs in = make_inputs(c, 13, 1);
    const int64_t n = compressor_entries(c.s, c.ratio);
    std::vector<float> ref;
    for (int64_t cb : {int64_t(0), int64_t(16), int64_t(24)})
      for (core::Isa isa : row_isas())
        for (int threads : {1, 3}) {
          auto t = std::make_shared<Tuning>();
          if (cb > 0) t->set("kv_compress.fwd", "*", {{"channel_block", cb}});
          set_active_tuning(cb > 0 ? t : nullptr);
          ScopedRowIsa path(isa);
          core::ThreadPool pool(threads);
          std::vector<float> k(static_cast<size_t>(n * c.hd), NAN);
          kv_compress_forward(in.kt.data(), in.zt.data(), in.ape.data(), k.data(), c.s, c.hd, c.ratio, &pool);
          set_active_tuning(nullptr);
          for (float x : k) ASSERT_FALSE(std::isnan(x)) << "an output was not written";
          if (ref.empty()) ref = k;
          else
            EXPECT_TRUE(same_bytes(k, ref))
                << "channel_block " << cb << ", " << core::to_string(isa) << ", " << threads << " threads";
        }
  }
}

// The multi-thread ratio-128 backward adds each entry's dzt to dape in entry order, row by row:
// in its gradient pass once its turn has come, from the entry's L2 buffer for the rows computed
// before it came (at a later step of the pass or at the end), else (it finished first) from dzt
// in memory: the latter forced for every entry gives the same bits as one thread. Which rows take
// which way depends on timing: the runs of 2 and 3 threads are repeated. {1300, 520, 128}: 4
// turn steps of 32 rows per entry; {8200, 264, 128}: kt and zt over 16 MiB together (from
// memory), 2 steps of 64 rows, an 8-lane channel tail in every entry.
TEST(KvCompressor, BackwardDapeFromMemorySameBits) {
  for (CompShape c : {CompShape{1300, 520, 128}, CompShape{8200, 264, 128}}) {
    SCOPED_TRACE("s " + std::to_string(c.s) + " hd " + std::to_string(c.hd));
    Inputs in = make_inputs(c, 7, 2);
    const int64_t C = compressor_width(c.ratio, c.hd);
    std::vector<float> ref;
    for (bool spill : {false, true})
      for (int threads : {1, 2, 3, 2, 3, 2, 3}) {
        kv_compress_backward_spill_for_test(spill);
        core::ThreadPool pool(threads);
        std::vector<float> dkt(static_cast<size_t>(c.s * C), NAN), dzt = dkt;
        std::vector<float> dape(static_cast<size_t>(c.ratio * C), NAN);
        kv_compress_backward(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(), dkt.data(),
                             dzt.data(), dape.data(), c.s, c.hd, c.ratio, &pool);
        kv_compress_backward_spill_for_test(false);
        std::vector<float> all = dkt;
        all.insert(all.end(), dzt.begin(), dzt.end());
        all.insert(all.end(), dape.begin(), dape.end());
        for (float x : all) ASSERT_FALSE(std::isnan(x)) << "an output was not written";
        if (ref.empty()) ref = all;
        else EXPECT_TRUE(same_bytes(all, ref)) << threads << " threads, spill " << spill;
      }
  }
}

// The forward's kept statistics (ratio != 4) and the backward from them: the same k as the plain
// forward, and the same dkt, dzt and dape as the backward that derives the statistics again, for
// stats written by the untuned pipelined forward and by a tuned channel_block's chunks (channel
// ranges), on 1-3 threads (the multi-thread split by entries adds dape in turns; spill: every
// entry's dzt from memory) and every vector path. {1300, 520, 128}, {2100, 136, 126} and
// {8200, 264, 128} take the AVX-512 split by entries (2^18 floats and more; 126 rows: groups of 4
// and 2 left over, an 8-lane channel tail), which reads the statistics (none of them streams
// its gradients: that needs hd % 16 == 0 and 64-byte aligned outputs, StreamingGradientsSameBits);
// {300, 17, 128} and {9, 3, 2} the channel-block paths, which derive them; {203, 40, 4} ratio 4,
// which keeps none (width 0, null stats).
TEST(KvCompressor, BackwardFromStatsSameBits) {
  for (CompShape c : {CompShape{1300, 520, 128}, CompShape{2100, 136, 126}, CompShape{8200, 264, 128},
                      CompShape{300, 17, 128}, CompShape{9, 3, 2}, CompShape{203, 40, 4}}) {
    SCOPED_TRACE("s " + std::to_string(c.s) + " hd " + std::to_string(c.hd) + " ratio " + std::to_string(c.ratio));
    Inputs in = make_inputs(c, 17, 1);
    const int64_t C = compressor_width(c.ratio, c.hd), n = compressor_entries(c.s, c.ratio);
    const int64_t width = compressor_stats_width(c.ratio, c.hd);
    EXPECT_EQ(width, c.ratio == 4 ? 0 : 3 * c.hd);
    for (int64_t cb : {int64_t(0), int64_t(24)})
      for (core::Isa isa : row_isas())
        for (int threads : {1, 2, 3})
          for (bool spill : {false, true}) {
            if (spill && threads == 1) continue;  // one thread adds dape in its gradient pass
            const std::string tag = "channel_block " + std::to_string(cb) + ", " + core::to_string(isa) + ", " +
                                    std::to_string(threads) + " threads, spill " + std::to_string(spill);
            ScopedRowIsa path(isa);
            core::ThreadPool pool(threads);
            std::vector<float> k(static_cast<size_t>(n * c.hd), NAN), ks = k;
            std::vector<float> stats(static_cast<size_t>(std::max<int64_t>(1, n * width)), NAN);
            auto t = std::make_shared<Tuning>();
            if (cb > 0) t->set("kv_compress.fwd", "*", {{"channel_block", cb}});
            set_active_tuning(cb > 0 ? t : nullptr);
            kv_compress_forward(in.kt.data(), in.zt.data(), in.ape.data(), k.data(), c.s, c.hd, c.ratio, &pool);
            kv_compress_forward_keeping_stats(in.kt.data(), in.zt.data(), in.ape.data(), ks.data(),
                                              width > 0 ? stats.data() : nullptr, c.s, c.hd, c.ratio, &pool);
            set_active_tuning(nullptr);
            EXPECT_TRUE(same_bytes(ks, k)) << tag << ": k";
            for (int64_t q = 0; q < n * width; ++q) ASSERT_FALSE(std::isnan(stats[size_t(q)])) << tag << ": stats " << q;
            std::vector<float> dkt(static_cast<size_t>(c.s * C), NAN), dzt = dkt, dkts = dkt, dzts = dkt;
            std::vector<float> dape(static_cast<size_t>(c.ratio * C), NAN), dapes = dape;
            kv_compress_backward(in.kt.data(), in.zt.data(), in.ape.data(), in.dk.data(), dkt.data(),
                                 dzt.data(), dape.data(), c.s, c.hd, c.ratio, &pool);
            kv_compress_backward_spill_for_test(spill);
            kv_compress_backward_from_stats(in.kt.data(), in.zt.data(), in.ape.data(),
                                            width > 0 ? stats.data() : nullptr, in.dk.data(), dkts.data(),
                                            dzts.data(), dapes.data(), c.s, c.hd, c.ratio, &pool);
            kv_compress_backward_spill_for_test(false);
            for (const auto* v : {&dkts, &dzts, &dapes})
              for (float x : *v) ASSERT_FALSE(std::isnan(x)) << tag << ": an output was not written";
            EXPECT_TRUE(same_bytes(dkts, dkt)) << tag << ": dkt";
            EXPECT_TRUE(same_bytes(dzts, dzt)) << tag << ": dzt";
            EXPECT_TRUE(same_bytes(dapes, dape)) << tag << ": dape";
          }
  }
}

}  // namespace
}  // namespace trex::kernels
