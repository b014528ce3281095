// BatchDecoder: sequences decoded together give each sequence bit for bit what it gets decoded
// alone, whatever the mix of positions in a step and however many lanes split it, and slots are
// independent of one another. A lane that fails stops the step with its own error, promptly.
#include "trex/model/batch_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "model/random_ids.h"
#include "model/tiny_config.h"
#include "trex/core/safetensors.h"
#include "trex/core/thread_pool.h"
#include "trex/model/generator.h"
#include "trex/model/moe.h"
#include "trex/util/error.h"

namespace trex::model {
namespace {

using test_util::random_ids;

void expect_close(std::span<const float> got, std::span<const float> want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  size_t differ = 0;
  for (size_t v = 0; v < want.size(); ++v) differ += got[v] != want[v];
  EXPECT_EQ(differ, 0u) << what << ": logits differ from the lone generator's";
}

TEST(BatchDecoder, SequencesDecodedTogetherEqualEachDecodedAlone) {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128");
  Transformer model(c, 5, false);
  // Three sequences at different positions: prompts of 1, 7 and 20 tokens, then 140 steps
  // together (past the window, several ratio-4 blocks and one ratio-128 entry).
  const std::vector<std::vector<int32_t>> prompts = {
      random_ids(1, c.vocab, 1), random_ids(7, c.vocab, 2), random_ids(20, c.vocab, 3)};
  const int64_t steps = 140;
  std::vector<std::vector<int32_t>> feed;
  for (int s = 0; s < 3; ++s) feed.push_back(random_ids(steps, c.vocab, 10 + uint64_t(s)));

  BatchDecoder batch(model, 4);
  std::vector<std::unique_ptr<Generator>> alone;
  for (int s = 0; s < 3; ++s) alone.push_back(std::make_unique<Generator>(model));
  const int slots[3] = {3, 0, 2};  // any slots, in any order
  for (int s = 0; s < 3; ++s) {
    std::span<const float> a = alone[size_t(s)]->prefill(prompts[size_t(s)]);
    std::vector<float> want(a.begin(), a.end());
    expect_close(batch.prefill(slots[s], prompts[size_t(s)]), want, "prefill");
  }
  for (int64_t t = 0; t < steps; ++t) {
    // Every third step one sequence sits out, so the batch changes size and makeup.
    std::vector<int> which;
    std::vector<int32_t> ids;
    for (int s = 0; s < 3; ++s)
      if ((t + s) % 3 != 0 || t % 2 == 0) {
        which.push_back(s);
        ids.push_back(feed[size_t(s)][size_t(t)]);
      }
    std::vector<int> slot_ids;
    for (int s : which) slot_ids.push_back(slots[s]);
    std::span<const float> got = batch.step(slot_ids, ids);
    ASSERT_EQ(got.size(), which.size() * size_t(c.vocab));
    std::vector<float> rows(got.begin(), got.end());
    for (size_t b = 0; b < which.size(); ++b) {
      std::span<const float> want = alone[size_t(which[b])]->step(ids[b]);
      expect_close(std::span<const float>(rows).subspan(b * size_t(c.vocab), size_t(c.vocab)),
                   want, "step");
    }
  }
  for (int s = 0; s < 3; ++s)
    EXPECT_EQ(batch.position(slots[s]), alone[size_t(s)]->position());
  EXPECT_EQ(batch.position(1), 0);
}

// The split over lanes at the sizes where its paths change: 1, 2 and 3 lanes (explicit pools,
// whatever TREX_THREADS is); a vocabulary of 400 (25 head panels of 16: more than the 12-panel
// pieces the lanes take, so the head is split, last piece short); batches of up to 21 rows
// (over MoeLayer::kFewTokens = 16, where one lane runs its MoE in chunks of 16 rows and several
// lanes route every row to MoeDecode's experts at once).
TEST(BatchDecoder, ManyRowsOnOneToThreeLanesEqualEachDecodedAlone) {
  ModelConfig c = test_util::tiny_v4_config("0, 4");
  c.vocab = 400;
  Transformer model(c, 8, false);
  const int seqs = 21;
  const int64_t steps = 12;
  std::vector<std::vector<int32_t>> prompts, feed;
  for (int s = 0; s < seqs; ++s) {
    prompts.push_back(random_ids(1 + s % 6, c.vocab, 100 + uint64_t(s)));
    feed.push_back(random_ids(steps, c.vocab, 200 + uint64_t(s)));
  }
  // Step t feeds every sequence but those with (s + t) % 7 == 0 on odd steps: 21 rows on even
  // steps, 18 on odd ones.
  auto fed = [&](int s, int64_t t) { return t % 2 == 0 || (s + t) % 7 != 0; };
  // Each sequence alone (a Generator is a one-slot decoder: one lane), once for every pool.
  std::vector<std::vector<float>> want_prefill(seqs);
  std::vector<std::vector<std::vector<float>>> want_step(seqs);
  for (int s = 0; s < seqs; ++s) {
    Generator g(model);
    std::span<const float> a = g.prefill(prompts[size_t(s)]);
    want_prefill[size_t(s)].assign(a.begin(), a.end());
    for (int64_t t = 0; t < steps; ++t) {
      if (!fed(s, t)) continue;
      std::span<const float> r = g.step(feed[size_t(s)][size_t(t)]);
      want_step[size_t(s)].emplace_back(r.begin(), r.end());
    }
  }
  for (int threads = 1; threads <= 3; ++threads) {
    SCOPED_TRACE(std::to_string(threads) + " lanes");
    core::ThreadPool pool(threads);
    BatchDecoder batch(model, seqs + 2, &pool);
    auto slot_of = [&](int s) { return (s * 5 + 2) % (seqs + 2); };  // distinct, any order
    for (int s = 0; s < seqs; ++s)
      expect_close(batch.prefill(slot_of(s), prompts[size_t(s)]), want_prefill[size_t(s)],
                   "prefill");
    std::vector<size_t> next(seqs, 0);  // each sequence's next entry of want_step
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<int> which, slot_ids;
      std::vector<int32_t> ids;
      for (int s = seqs - 1; s >= 0; --s)  // rows in another order than the slots
        if (fed(s, t)) {
          which.push_back(s);
          slot_ids.push_back(slot_of(s));
          ids.push_back(feed[size_t(s)][size_t(t)]);
        }
      ASSERT_GT(which.size(), size_t(MoeLayer::kFewTokens));
      std::span<const float> got = batch.step(slot_ids, ids);
      ASSERT_EQ(got.size(), which.size() * size_t(c.vocab));
      for (size_t b = 0; b < which.size(); ++b) {
        const int s = which[b];
        expect_close(got.subspan(b * size_t(c.vocab), size_t(c.vocab)),
                     want_step[size_t(s)][next[size_t(s)]++], "step");
      }
    }
  }
}

// What a step that may hang uses, on the heap: a step that does not return within the watchdog's
// time is left on its thread with all of this, so that the test fails instead of hanging.
struct FailingStep {
  ModelConfig c;
  core::ThreadPool pool;
  Transformer model;
  BatchDecoder batch;
  std::vector<int> slots;
  std::vector<int32_t> ids;
  FailingStep(int threads, int rows)
      : c(test_util::tiny_v4_config("0, 4")), pool(threads), model(c, 9, false),
        batch(model, rows, &pool) {
    for (int b = 0; b < rows; ++b) {
      slots.push_back(b);
      ids.push_back(int32_t(b * 7 % c.vocab));
      batch.prefill(b, random_ids(3, c.vocab, 300 + uint64_t(b)));
    }
  }
};

// Runs f's step on a thread of its own; returns the text of what it threw ("" if it returned),
// or fails the test if it did not return within 60 s (not a timing check: a hung step never
// returns).
std::string step_error_or_hang(const std::shared_ptr<FailingStep>& f) {
  auto done = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = done->get_future();
  std::thread runner([f, done] {
    try {
      f->batch.step(f->slots, f->ids);
      done->set_value("");
    } catch (const std::exception& e) {
      done->set_value(e.what());
    }
  });
  if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    runner.detach();  // it keeps its own references to f and done
    ADD_FAILURE() << "the step did not return within 60 s: its lanes hang";
    return "(hung)";
  }
  runner.join();
  return result.get();
}

// Finding of review 4 (427eef3): a lane that failed before another lane reached the first
// barrier left that lane waiting for a generation no one would raise, and the step, the serve
// engine's thread and every client with it, hung. Here the last lane fails at once (an
// allocation failure) and lane 0 starts only after it has thrown and a further 0.3 s, so that
// it reaches the barrier already broken (were it earlier, it would be woken as any waiter is).
TEST(BatchDecoder, ALaneThatFailsBeforeTheOthersMeetStopsTheStep) {
  for (int threads : {2, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " lanes");
    auto f = std::make_shared<FailingStep>(threads, 4);
    auto thrown = std::make_shared<std::atomic<bool>>(false);
    f->batch.set_lane_hook_for_testing([threads, thrown](int lane) {
      if (lane == threads - 1) {
        thrown->store(true);
        throw std::bad_alloc();
      }
      if (lane == 0) {
        while (!thrown->load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
    });
    const std::string error = step_error_or_hang(f);
    if (error == "(hung)") return;  // the runner still uses f: leave it
    EXPECT_EQ(error, std::bad_alloc().what());
  }
}

// The step throws the failed lane's own exception, not the "another thread failed" that the
// other lanes throw when they find the barrier broken (the serve engine sends what() to the
// clients), whichever lane fails; the decoder steps again afterwards from reset slots.
TEST(BatchDecoder, AFailedStepThrowsTheFailingLanesErrorAndTheDecoderGoesOn) {
  for (int threads : {2, 3}) {
    for (int failing = 0; failing < threads; ++failing) {
      SCOPED_TRACE(std::to_string(threads) + " lanes, lane " + std::to_string(failing) + " fails");
      auto f = std::make_shared<FailingStep>(threads, 5);
      f->batch.set_lane_hook_for_testing([failing](int lane) {
        if (lane == failing)
          throw std::runtime_error("lane " + std::to_string(lane) + ": injected failure");
      });
      const std::string error = step_error_or_hang(f);
      if (error == "(hung)") return;  // the runner still uses f: leave it
      EXPECT_EQ(error, "lane " + std::to_string(failing) + ": injected failure");
      // Without the hook, from reset slots, the decoder gives each row what it gets alone.
      f->batch.set_lane_hook_for_testing(nullptr);
      const std::vector<int32_t> p = random_ids(4, f->c.vocab, 400);
      std::vector<std::vector<float>> want;
      for (size_t b = 0; b < f->slots.size(); ++b) {
        Generator g(f->model);
        g.prefill(p);
        std::span<const float> w = g.step(f->ids[b]);
        want.emplace_back(w.begin(), w.end());
        f->batch.reset(f->slots[b]);
        f->batch.prefill(f->slots[b], p);
      }
      std::span<const float> got = f->batch.step(f->slots, f->ids);
      for (size_t b = 0; b < want.size(); ++b)
        expect_close(got.subspan(b * size_t(f->c.vocab), size_t(f->c.vocab)), want[b], "step");
    }
  }
}

// Noticed in session 11: a step called from a thread that runs a job of the decoder's own pool
// found the pool's other threads busy (its run() goes serial there), so lane 0 waited at the
// first barrier for a lane that could only start after it, forever. Such a step now runs on the
// calling thread as one lane: it returns, with the bits of each row decoded alone. The step is
// made from the pool's last thread (a worker) and, for 2 threads, from thread 0 (the caller).
TEST(BatchDecoder, AStepFromAJobOfItsOwnPoolRunsOnOneLaneWithTheSameBits) {
  for (int threads : {2, 3}) {
    for (int from : {0, threads - 1}) {
      if (from == 0 && threads == 3) continue;
      SCOPED_TRACE(std::to_string(threads) + " threads, step from thread " + std::to_string(from));
      const int rows = 4;
      auto f = std::make_shared<FailingStep>(threads, rows);
      // Each row alone, on a lone generator (its own default-pool decoder, one slot).
      std::vector<std::vector<float>> want;
      for (int b = 0; b < rows; ++b) {
        Generator g(f->model);
        g.prefill(random_ids(3, f->c.vocab, 300 + uint64_t(b)));
        std::span<const float> r = g.step(f->ids[size_t(b)]);
        want.emplace_back(r.begin(), r.end());
      }
      auto done = std::make_shared<std::promise<std::vector<float>>>();
      std::future<std::vector<float>> result = done->get_future();
      std::thread runner([f, done, from] {
        try {
          std::vector<float> got;
          f->pool.run([&](int t) {
            if (t != from) return;
            std::span<const float> l = f->batch.step(f->slots, f->ids);
            got.assign(l.begin(), l.end());
          });
          done->set_value(got);
        } catch (...) {
          done->set_exception(std::current_exception());
        }
      });
      if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
        runner.detach();  // it keeps its own references to f and done
        ADD_FAILURE() << "a step from a job of its own pool did not return within 60 s: it hangs";
        continue;
      }
      runner.join();
      const std::vector<float> got = result.get();
      const size_t V = size_t(f->c.vocab);
      ASSERT_EQ(got.size(), rows * V);
      for (int b = 0; b < rows; ++b)
        expect_close(std::span<const float>(got).subspan(size_t(b) * V, V), want[size_t(b)],
                     "step from inside the pool");
    }
  }
}

// A checkpoint's routing state unlike the one a model starts with: a non-zero selection bias on
// every score-routed layer, each hash layer's table with every expert moved to the next.
std::string write_routing_state(const ModelConfig& c, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".safetensors";
  std::vector<std::vector<float>> biases;
  std::vector<std::vector<int32_t>> tables;
  std::vector<core::StTensorSource> tensors;
  std::mt19937_64 rng(77);
  for (int l = 0; l < c.layers; ++l) {
    const MoeLayer m(c, l < c.ffn.hash_layers);
    const std::string base = "layers." + std::to_string(l) + ".ffn.gate.";
    if (m.tid2eid().empty()) {
      std::vector<float>& b = biases.emplace_back(m.bias().size());
      for (float& v : b) v = float(int(rng() % 9) - 4) * 0.5f;
      tensors.push_back({base + "bias", core::StDtype::kF32, {int64_t(b.size())}, nullptr, {}});
    } else {
      std::vector<int32_t>& t = tables.emplace_back(m.tid2eid());
      for (int32_t& e : t) e = (e + 1) % c.ffn.routed_experts;
      tensors.push_back({base + "tid2eid", core::StDtype::kI32, {int64_t(c.vocab), c.ffn.top_k},
                         nullptr, {}});
    }
  }
  // The vectors are complete: point each tensor at its data.
  size_t bi = 0, ti = 0;
  for (core::StTensorSource& t : tensors)
    t.data = t.dtype == core::StDtype::kF32 ? static_cast<const void*>(biases[bi++].data())
                                            : static_cast<const void*>(tables[ti++].data());
  core::write_safetensors(path, tensors);
  return path;
}

// prefill_many: prompts prefilled together, on one to three lanes, leave each slot as prefill()
// alone would (its logits and its caches, checked by a step after), whatever the prompt's length:
// 2 to MoeLayer::kPackedFewTokens tokens (past kFewTokens the MoE's products on the packed copies
// only, as the attention's projections) on the lanes, past
// kLanePrefillMaxTokens alone with the whole default pool, one token (a step), and a slot that
// already has tokens (token by token). With a checkpoint's routing state loaded, which every
// lane's MoE layers must have (the lanes past the first are made to take prompts).
TEST(BatchDecoder, PromptsPrefilledTogetherEqualEachPrefilledAlone) {
  ModelConfig c = test_util::tiny_v4_config("0, 4");
  ASSERT_EQ(c.ffn.hash_layers, 1);  // one hash layer, one score-routed: both tables matter
  Transformer model(c, 10, false);
  const std::string routing = write_routing_state(c, "prefill_many_routing");
  const int64_t long_len = BatchDecoder::kLanePrefillMaxTokens + 1;
  const int64_t packed_len = MoeLayer::kPackedFewTokens;
  static_assert(MoeLayer::kPackedFewTokens <= BatchDecoder::kLanePrefillMaxTokens);
  const std::vector<int64_t> lengths = {5, 1, packed_len, long_len, 20, 2, 9, 3, long_len + 30};
  const int n = int(lengths.size());
  const int64_t on_lanes = 5, long_ones = 2;  // prompts 0, 2, 4, 5, 7 and 3, 8
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < n; ++i)
    prompts.push_back(random_ids(lengths[size_t(i)], c.vocab, 500 + uint64_t(i)));
  const std::vector<int32_t> history = random_ids(4, c.vocab, 600);  // slot of prompt 6, before
  const std::vector<int32_t> next = random_ids(n, c.vocab, 700);
  std::vector<std::vector<float>> want_prefill, want_step;
  for (int i = 0; i < n; ++i) {
    Generator g(model);
    g.load_routing_state(routing);
    if (i == 6) g.prefill(history);
    std::span<const float> a = g.prefill(prompts[size_t(i)]);
    want_prefill.emplace_back(a.begin(), a.end());
    std::span<const float> b = g.step(next[size_t(i)]);
    want_step.emplace_back(b.begin(), b.end());
  }
  for (int threads = 1; threads <= 3; ++threads) {
    SCOPED_TRACE(std::to_string(threads) + " lanes");
    core::ThreadPool pool(threads);
    BatchDecoder batch(model, n + 1, &pool);
    batch.load_routing_state(routing);
    // Lane 0 takes no prompt before another lane is about to: each lane's MoE layers are used.
    std::atomic<bool> other_lane{false};
    batch.set_lane_hook_for_testing([&other_lane](int lane) {
      if (lane != 0) {
        other_lane = true;
        return;
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!other_lane && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
    std::vector<int> slots;
    std::vector<std::span<const int32_t>> spans;
    for (int i = 0; i < n; ++i) {
      slots.push_back((i * 3 + 1) % (n + 1));
      spans.emplace_back(prompts[size_t(i)]);
    }
    batch.prefill(slots[6], history);
    std::span<const float> got = batch.prefill_many(slots, spans);
    batch.set_lane_hook_for_testing(nullptr);
    // The long prompts ran alone (their kernels on the whole default pool), never on a lane.
    const BatchDecoder::PrefillCounts counts = batch.prefill_counts();
    EXPECT_EQ(counts.on_lanes, threads > 1 ? on_lanes : 0);
    EXPECT_EQ(counts.alone, 1 + long_ones + (threads > 1 ? 0 : on_lanes));  // 1: the history
    if (threads > 1) {
      EXPECT_TRUE(other_lane) << "no lane but the first took a prompt";
    }
    const size_t V = size_t(c.vocab);
    ASSERT_EQ(got.size(), size_t(n) * V);
    const std::vector<float> rows(got.begin(), got.end());
    for (int i = 0; i < n; ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i));
      expect_close(std::span<const float>(rows).subspan(size_t(i) * V, V), want_prefill[size_t(i)],
                   "prefill_many");
      EXPECT_EQ(batch.position(slots[size_t(i)]),
                int64_t(prompts[size_t(i)].size()) + (i == 6 ? int64_t(history.size()) : 0));
    }
    std::span<const float> st = batch.step(slots, next);
    for (int i = 0; i < n; ++i)
      expect_close(st.subspan(size_t(i) * V, V), want_step[size_t(i)], "step after prefill_many");
    // Bad calls change nothing.
    const int twice[2] = {0, 0};
    std::vector<std::span<const int32_t>> two = {spans[0], spans[1]};
    EXPECT_THROW(batch.prefill_many(twice, two), InputError);
    const int bad_slot[1] = {n + 1};
    EXPECT_THROW(batch.prefill_many(bad_slot, std::span(two).first(1)), InputError);
    const int32_t bad_id[1] = {int32_t(c.vocab)};
    std::vector<std::span<const int32_t>> bad = {spans[0], std::span<const int32_t>(bad_id, 1)};
    const int ok_slots[2] = {slots[0], slots[1]};
    const int64_t before = batch.position(slots[0]);
    EXPECT_THROW(batch.prefill_many(ok_slots, bad), InputError);
    EXPECT_EQ(batch.position(slots[0]), before);
  }
}

// Chunked prefill: a slot that takes a run of rows in a step reads those tokens in order, as
// feeding them one at a time would, bit for bit (its run's one logits row after its last token,
// and its caches, checked by the steps after), with other slots decoding in the same steps, the
// run first, between or last among the rows, on one to three lanes (the lanes never split a
// run). A slot given in two runs is refused before anything changes.
TEST(BatchDecoder, APromptReadInChunksEqualsItsTokensFedOneByOne) {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128");
  Transformer model(c, 7, false);
  const size_t V = size_t(c.vocab);
  // Sequences 0 and 2 decode a token a step; sequence 1 reads a 40-token prompt in chunks of
  // 7, 1, 13 and 19 (past the window of 8 and several ratio-4 blocks), then decodes.
  const std::vector<int64_t> chunks = {7, 1, 13, 19};
  const int64_t steps = int64_t(chunks.size()) + 3;
  const std::vector<int32_t> prompt = random_ids(40, c.vocab, 31);
  const std::vector<int32_t> start0 = random_ids(3, c.vocab, 32), start2 = random_ids(11, c.vocab, 33);
  std::vector<std::vector<int32_t>> feed;  // each sequence's tokens after its start, a step each
  for (int s = 0; s < 3; ++s) feed.push_back(random_ids(steps, c.vocab, 40 + uint64_t(s)));
  // Alone, one token at a time: want[s][t] the logits after the token sequence s takes at step t
  // (sequence 1: after its chunk's last token).
  std::vector<std::vector<std::vector<float>>> want(3);
  for (int s = 0; s < 3; ++s) {
    Generator g(model);
    if (s == 0) g.prefill(start0);
    if (s == 2) g.prefill(start2);
    size_t at = 0;
    for (int64_t t = 0; t < steps; ++t) {
      std::span<const float> l;
      if (s == 1 && t < int64_t(chunks.size())) {
        for (int64_t k = 0; k < chunks[size_t(t)]; ++k)
          l = at == 0 ? g.prefill(std::span<const int32_t>(&prompt[at++], 1)) : g.step(prompt[at++]);
      } else {
        l = g.step(feed[size_t(s)][size_t(t)]);
      }
      want[size_t(s)].emplace_back(l.begin(), l.end());
    }
  }
  for (int threads = 1; threads <= 3; ++threads) {
    for (int place = 0; place < 3; ++place) {  // the run's place among the step's runs
      SCOPED_TRACE(std::to_string(threads) + " lanes, the run at " + std::to_string(place));
      core::ThreadPool pool(threads);
      BatchDecoder batch(model, 3, &pool);
      batch.prefill(0, start0);
      batch.prefill(2, start2);
      size_t at = 0;
      for (int64_t t = 0; t < steps; ++t) {
        std::vector<int> order = {0, 2};
        order.insert(order.begin() + place, 1);  // {1, 0, 2}, {0, 1, 2} or {0, 2, 1}
        std::vector<int> slots;
        std::vector<int32_t> ids;
        for (int s : order) {
          if (s == 1 && t < int64_t(chunks.size())) {
            for (int64_t k = 0; k < chunks[size_t(t)]; ++k) {
              slots.push_back(1);
              ids.push_back(prompt[at++]);
            }
          } else {
            slots.push_back(s);
            ids.push_back(feed[size_t(s)][size_t(t)]);
          }
        }
        std::span<const float> got = batch.step(slots, ids);
        ASSERT_EQ(got.size(), 3 * V) << "one logits row per run";
        const std::vector<float> rows(got.begin(), got.end());
        for (size_t r = 0; r < order.size(); ++r)
          expect_close(std::span<const float>(rows).subspan(r * V, V),
                       want[size_t(order[r])][size_t(t)], "step with a chunk");
      }
      EXPECT_EQ(batch.position(1), int64_t(prompt.size()) + steps - int64_t(chunks.size()));
      // A slot in two runs: refused, nothing fed.
      const int split[3] = {0, 1, 0};
      const int32_t three[3] = {1, 2, 3};
      const int64_t before = batch.position(0);
      EXPECT_THROW(batch.step(split, three), InputError);
      EXPECT_EQ(batch.position(0), before);
    }
  }
}

// A step whose rows cannot be cut between lanes where they were (a prompt's chunk alone, or a
// chunk with one row before or after it): the lanes without rows of their own share the MoE
// experts and the head, and every row still has the bits of feeding its slot one token at a time.
TEST(BatchDecoder, AChunkAloneOrBesideOneRowOnSeveralLanesEqualsItsTokensFedOneByOne) {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128");
  Transformer model(c, 8, false);
  const size_t V = size_t(c.vocab);
  // Each step: sequence 1's chunk (its prompt's next tokens), and whether sequence 0 takes a row
  // before it, after it, or not at all.
  struct Step {
    int64_t chunk;
    int row0;  // -1: before the chunk, 1: after, 0: none
  };
  const std::vector<Step> plan = {{7, 0}, {13, 1}, {19, -1}, {1, 0}, {9, 0}, {1, 1}};
  int64_t total = 0;
  for (const Step& st : plan) total += st.chunk;
  const std::vector<int32_t> prompt = random_ids(total, c.vocab, 51);
  const std::vector<int32_t> start0 = random_ids(5, c.vocab, 52);
  const std::vector<int32_t> feed0 = random_ids(int64_t(plan.size()), c.vocab, 53);
  // Alone, one token at a time: the logits after each chunk, and after each row of sequence 0.
  std::vector<std::vector<float>> want1, want0;
  {
    Generator g1(model), g0(model);
    g0.prefill(start0);
    size_t at = 0;
    for (size_t t = 0; t < plan.size(); ++t) {
      std::span<const float> l;
      for (int64_t k = 0; k < plan[t].chunk; ++k)
        l = at == 0 ? g1.prefill(std::span<const int32_t>(&prompt[at++], 1)) : g1.step(prompt[at++]);
      want1.emplace_back(l.begin(), l.end());
      if (plan[t].row0 != 0) {
        std::span<const float> l0 = g0.step(feed0[t]);
        want0.emplace_back(l0.begin(), l0.end());
      } else {
        want0.emplace_back();
      }
    }
  }
  for (int threads = 1; threads <= 3; ++threads) {
    SCOPED_TRACE(std::to_string(threads) + " lanes");
    core::ThreadPool pool(threads);
    BatchDecoder batch(model, 2, &pool);
    batch.prefill(0, start0);
    // The lanes each step enters: a step of B >= 2 rows runs on min(lanes, B) of them even where
    // its rows are one run (the lanes without rows share the experts and the head). The decoder
    // has min(threads, slots) = min(threads, 2) lanes.
    std::atomic<unsigned> entered{0};
    batch.set_lane_hook_for_testing([&entered](int lane) { entered |= 1u << lane; });
    size_t at = 0;
    for (size_t t = 0; t < plan.size(); ++t) {
      std::vector<int> slots;
      std::vector<int32_t> ids;
      if (plan[t].row0 < 0) slots.push_back(0), ids.push_back(feed0[t]);
      for (int64_t k = 0; k < plan[t].chunk; ++k) slots.push_back(1), ids.push_back(prompt[at++]);
      if (plan[t].row0 > 0) slots.push_back(0), ids.push_back(feed0[t]);
      entered = 0;
      std::span<const float> got = batch.step(slots, ids);
      const int want_lanes = int(std::min<size_t>(size_t(std::min(threads, 2)), slots.size()));
      if (want_lanes > 1) {
        EXPECT_EQ(std::popcount(entered.load()), want_lanes) << "step " << t << ": lanes entered";
      }
      const size_t runs = plan[t].row0 == 0 ? 1 : 2;
      ASSERT_EQ(got.size(), runs * V);
      const std::vector<float> rows(got.begin(), got.end());
      const size_t r1 = plan[t].row0 < 0 ? 1 : 0;  // the chunk's logits row
      expect_close(std::span<const float>(rows).subspan(r1 * V, V), want1[t], "the chunk");
      if (runs == 2)
        expect_close(std::span<const float>(rows).subspan((1 - r1) * V, V), want0[t], "the row beside it");
    }
    EXPECT_EQ(batch.position(1), total);
  }
}

TEST(BatchDecoder, ResettingOneSlotLeavesTheOthers) {
  ModelConfig c = test_util::tiny_v4_config("0, 4");
  Transformer model(c, 6, false);
  const std::vector<int32_t> p = random_ids(9, c.vocab, 4);
  BatchDecoder batch(model, 2);
  batch.prefill(0, p);
  batch.prefill(1, p);
  batch.reset(1);
  EXPECT_EQ(batch.position(1), 0);
  EXPECT_EQ(batch.position(0), 9);
  // Slot 0 continues as a lone generator would; slot 1 starts over.
  Generator g(model);
  g.prefill(p);
  const int s0[1] = {0};
  const int32_t next = 3;
  std::span<const float> got = batch.step(s0, std::span<const int32_t>(&next, 1));
  std::vector<float> rows(got.begin(), got.end());
  std::span<const float> want = g.step(next);
  for (size_t v = 0; v < want.size(); ++v) EXPECT_EQ(rows[v], want[v]) << v;  // same path: same bits
}

TEST(BatchDecoder, BadCallsAreInputErrors) {
  ModelConfig c = test_util::tiny_v4_config("0");
  Transformer model(c, 1, false);
  BatchDecoder batch(model, 2);
  const int two[2] = {0, 1};
  const int32_t one_id[1] = {1};
  EXPECT_THROW(batch.step(two, one_id), InputError);                 // lengths differ
  const int bad_slot[1] = {2};
  EXPECT_THROW(batch.step(bad_slot, one_id), InputError);            // no such slot
  const int32_t bad_id[1] = {c.vocab};
  const int s0[1] = {0};
  EXPECT_THROW(batch.step(s0, bad_id), InputError);                  // id outside the vocabulary
  EXPECT_THROW(batch.prefill(0, std::span<const int32_t>()), InputError);
  EXPECT_THROW(BatchDecoder(model, 0), InputError);
}

}  // namespace
}  // namespace trex::model
