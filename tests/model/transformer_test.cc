// The whole V4 transformer: layout against the accounting, deterministic init, a finite-difference
// check of every parameter tensor, packing, save/load, bad input, and a short training run.
#include "trex/model/transformer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "model/tiny_config.h"
#include "trex/model/accounting.h"
#include "trex/util/error.h"

namespace trex::model {
namespace {

std::string config_path(const char* name) { return std::string(TREX_SOURCE_DIR) + "/configs/model/" + name; }

// Gate biases are routing state, not trained parameters; the accounting counts them.
double bias_count(const ModelConfig& c, bool mtp) {
  int score_layers = c.layers - c.ffn.hash_layers + (mtp && c.mtp_depth > 0 ? 1 : 0);
  return double(score_layers) * c.ffn.routed_experts;
}

TEST(ParamLayout, TotalsEqualTheAccounting) {
  for (const char* name : {"v4-nano.toml", "v4-micro.toml"}) {
    ModelConfig c = load_model_config(config_path(name));
    ParamCounts counts = count_parameters(c);
    ParamLayout with = build_param_layout(c, true), without = build_param_layout(c, false);
    EXPECT_EQ(double(with.total) + bias_count(c, true), counts.total()) << name;
    EXPECT_EQ(double(without.total) + bias_count(c, false), counts.total_main()) << name;
    int64_t next = 0;
    for (const ParamInfo& p : with.params) {
      EXPECT_EQ(p.offset, next) << p.name;
      int64_t n = 1;
      for (int64_t s : p.shape) n *= s;
      EXPECT_EQ(p.numel, n) << p.name;
      next += p.numel;
    }
    EXPECT_EQ(next, with.total);
  }
  ModelConfig nano = load_model_config(config_path("v4-nano.toml"));
  ParamLayout l = build_param_layout(nano);
  ASSERT_NE(l.find("layers.1.attn.indexer.wq_b"), nullptr);
  EXPECT_TRUE(l.find("layers.1.attn.indexer.wq_b")->indexer);
  EXPECT_FALSE(l.find("layers.1.attn.compressor.wkv")->indexer);
  EXPECT_EQ(l.find("layers.0.attn.compressor.wkv"), nullptr);  // ratio 0
  EXPECT_EQ(l.find("layers.2.attn.indexer.wq_b"), nullptr);    // ratio 128
  EXPECT_EQ(l.find("layers.2.attn.compressor.ape")->shape, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(l.find("layers.3.ffn.experts.7.w2")->shape, (std::vector<int64_t>{256, 192}));
  EXPECT_EQ(l.find("layers.0.hc_attn_fn")->shape, (std::vector<int64_t>{24, 1024}));
  EXPECT_TRUE(l.find("head")->decay);
  EXPECT_FALSE(l.find("norm")->decay);
  EXPECT_FALSE(l.find("layers.2.attn.compressor.ape")->decay);
  EXPECT_FALSE(l.find("layers.0.hc_ffn_scale")->decay);
}

TEST(Transformer, InitIsAPureFunctionOfConfigAndSeed) {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128", 1);
  Transformer a(c, 5), b(c, 5), other(c, 6), no_mtp(c, 5, false);
  ASSERT_EQ(a.layout().total, b.layout().total);
  EXPECT_EQ(std::memcmp(a.params(), b.params(), sizeof(float) * size_t(a.layout().total)), 0);
  EXPECT_NE(std::memcmp(a.params(), other.params(), sizeof(float) * size_t(a.layout().total)), 0);
  // The main tensors do not depend on whether MTP is on.
  EXPECT_TRUE(a.mtp_enabled());
  EXPECT_FALSE(no_mtp.mtp_enabled());
  EXPECT_EQ(std::memcmp(a.params(), no_mtp.params(), sizeof(float) * size_t(no_mtp.layout().total)), 0);
  // Spec section 11: N(0, 0.02) matrices, unit norms and mHC scales, zero sinks and bases.
  const ParamInfo* e = a.layout().find("embed");
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < e->numel; ++i) sum += a.params()[e->offset + i], sq += double(a.params()[e->offset + i]) * a.params()[e->offset + i];
  EXPECT_NEAR(sum / double(e->numel), 0.0, 0.002);
  EXPECT_NEAR(std::sqrt(sq / double(e->numel)), 0.02, 0.002);
  EXPECT_EQ(a.params()[a.layout().find("layers.1.attn_norm")->offset], 1.f);
  EXPECT_EQ(a.params()[a.layout().find("layers.1.hc_ffn_scale")->offset + 2], 1.f);
  EXPECT_EQ(a.params()[a.layout().find("layers.1.hc_ffn_base")->offset], 0.f);
  EXPECT_EQ(a.params()[a.layout().find("layers.1.attn.attn_sink")->offset], 0.f);
}

// Two documents of lengths 150 and 130: the HCA layer (ratio 128) gets one entry per document,
// and with indexer top_k 40 every visible ratio-4 entry is selected (at most 37), so the
// indexer's choice never jumps under a finite-difference step.
Batch two_documents(const ModelConfig& c, int64_t len0, int64_t len1, uint32_t seed) {
  std::mt19937 rng(seed);
  Batch b;
  b.tokens = len0 + len1;
  for (int64_t t = 0; t < b.tokens; ++t) b.ids.push_back(int32_t(rng() % uint32_t(c.vocab)));
  for (int64_t t = 0; t < b.tokens; ++t) {
    bool last = t == len0 - 1 || t == b.tokens - 1;
    b.targets.push_back(last ? -1 : b.ids[size_t(t + 1)]);
  }
  b.targets[5] = -1;  // a masked position inside a document
  b.docs = {DocSpan{0, len0}, DocSpan{len0, len1}};
  return b;
}

ModelConfig grad_check_config() {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128", /*mtp=*/1);
  c.indexer.top_k = 40;
  return c;
}

// The objective whose gradient forward_backward adds (grad_scale = 1 / counted): backbone
// tensors see the CE (+ MTP) part, indexer tensors the indexer's KL loss alone.
double backbone_objective(const LossStats& s, const ModelConfig& c) {
  return (s.ce_sum + c.mtp_loss_weight * s.mtp_sum) / double(s.counted);
}

// Step and tolerance. The loss is a mean of fp32 row losses; its rounding noise is about 2e-8
// (4e-7 per row over ~270 rows), which a central difference divides by 2h. With steps of 1% of
// a tensor's scale the truncation error stays near 1e-4 relative, and the noise term kLossNoise / h
// only matters for tensors whose directional derivative is ~1e-6 (mHC bases and scales of the
// head; the kernel tests check those in fp64). A wrong term in any backward is off by O(1).
const double kStep = 1e-2;
const double kLossNoise = 4e-8;
TEST(Transformer, WholeModelGradientsMatchFiniteDifferences) {
  ModelConfig c = grad_check_config();
  Transformer m(c, 3);
  // A step that changes an expert choice is a jump, not a derivative: the score-routed layers
  // get a bias that fixes their choice to experts 0 and 1 (their weights w still vary with the
  // scores, so the gate is checked); the hash layer routes to all experts by token.
  for (size_t i = 0; i < m.expert_load().size(); ++i)
    if (float* b = m.routing_bias(int(i)))
      for (int e = 0; e < c.ffn.routed_experts; ++e) b[e] = e < 2 ? 100.f : 0.f;
  // Non-trivial norms, mHC scales and sinks so that their gradients are not special cases.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> jitter(-0.2f, 0.2f);
  for (const ParamInfo& p : m.layout().params)
    if (!p.decay)
      for (int64_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] += jitter(rng);
  Batch batch = two_documents(c, 150, 130, 4);
  m.zero_grads();
  LossStats st = m.forward_backward(batch);
  ASSERT_GT(st.counted, 0);
  ASSERT_GT(st.mtp_counted, 0);
  ASSERT_GT(st.indexer_loss, 0);
  std::vector<float> grads(m.grads(), m.grads() + m.layout().total);
  auto loads0 = m.expert_load();

  int bad = 0, checked = 0;
  for (const ParamInfo& p : m.layout().params) {
    float* w = m.params() + p.offset;
    std::vector<float> keep(w, w + p.numel), dir(size_t(p.numel));
    double rms = 0;
    for (float v : keep) rms += double(v) * v;
    rms = std::sqrt(rms / double(p.numel));
    // Half along the analytic gradient, half random: the derivative along it is never tiny
    // (fp32 noise would dominate), and a wrong sign or scale anywhere still shows.
    double gnorm = 0;
    for (int64_t i = 0; i < p.numel; ++i) gnorm += double(grads[size_t(p.offset + i)]) * grads[size_t(p.offset + i)];
    gnorm = std::sqrt(gnorm / double(p.numel));
    std::normal_distribution<float> nd(0.f, 1.f);
    for (int64_t i = 0; i < p.numel; ++i)
      dir[size_t(i)] = 0.7f * nd(rng) + (gnorm > 0 ? float(grads[size_t(p.offset + i)] / gnorm) : 0.f);
    double analytic = 0;
    for (int64_t i = 0; i < p.numel; ++i) analytic += double(grads[size_t(p.offset + i)]) * dir[size_t(i)];
    const double h = kStep * std::max(rms, 0.02);
    auto eval = [&](double sign) {
      for (int64_t i = 0; i < p.numel; ++i) w[i] = float(keep[size_t(i)] + sign * h * dir[size_t(i)]);
      LossStats s = m.forward(batch);
      EXPECT_EQ(m.expert_load(), loads0) << p.name << ": a step changed the routing";
      return p.indexer ? s.indexer_loss : backbone_objective(s, c);
    };
    double lp = eval(1), lm = eval(-1);
    std::copy(keep.begin(), keep.end(), w);
    double fd = (lp - lm) / (2 * h);
    double tol = 3e-2 * std::fabs(fd) + kLossNoise / h;
    ++checked;
    if (!(std::fabs(fd - analytic) <= tol)) {
      ++bad;
      ADD_FAILURE() << p.name << ": analytic " << analytic << " fd " << fd;
    }
  }
  EXPECT_EQ(bad, 0) << "of " << checked << " tensors";
}

TEST(Transformer, PackedDocumentsEqualSeparateRuns) {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128", 1);
  Transformer m(c, 11);
  Batch both = two_documents(c, 140, 60, 12);
  std::vector<float> logits_both, logits_a, logits_b;
  LossStats sb = m.forward(both, &logits_both);
  Batch a, b;
  a.tokens = 140;
  a.ids.assign(both.ids.begin(), both.ids.begin() + 140);
  a.targets.assign(both.targets.begin(), both.targets.begin() + 140);
  b.tokens = 60;
  b.ids.assign(both.ids.begin() + 140, both.ids.end());
  b.targets.assign(both.targets.begin() + 140, both.targets.end());
  LossStats sa = m.forward(a, &logits_a), sc = m.forward(b, &logits_b);
  EXPECT_EQ(sb.counted, sa.counted + sc.counted);
  // MTP at t predicts target t + 1 inside the document: one position fewer per document, and the
  // masked target at 5 costs both heads one position each.
  EXPECT_EQ(sb.counted, 140 - 2 + 60 - 1);
  EXPECT_EQ(sb.mtp_counted, sb.counted - 2);
  EXPECT_EQ(sb.mtp_counted, sa.mtp_counted + sc.mtp_counted);
  EXPECT_NEAR(sb.ce_sum, sa.ce_sum + sc.ce_sum, 1e-4 * sb.ce_sum);
  EXPECT_NEAR(sb.mtp_sum, sa.mtp_sum + sc.mtp_sum, 1e-4 * sb.mtp_sum);
  // (The indexer loss is a mean over the rows of one call, so it does not add across calls.)
  const int64_t V = c.vocab;
  for (int64_t i = 0; i < 140 * V; i += 7) EXPECT_NEAR(logits_both[size_t(i)], logits_a[size_t(i)], 1e-4);
  for (int64_t i = 0; i < 60 * V; i += 7) EXPECT_NEAR(logits_both[size_t(140 * V + i)], logits_b[size_t(i)], 1e-4);
}

TEST(Transformer, SaveLoadRoundTripIsBitExact) {
  ModelConfig c = test_util::tiny_v4_config("0, 4", 1);
  Transformer a(c, 21), b(c, 22);
  Batch batch = two_documents(c, 40, 30, 23);
  a.forward(batch);
  a.update_routing_bias();  // non-zero biases travel with the weights
  std::string path = (std::filesystem::temp_directory_path() / ("trex_xfmr_" + std::to_string(::getpid()) + ".safetensors")).string();
  a.save(path, {{"step", "7"}});
  b.load(path);
  EXPECT_EQ(std::memcmp(a.params(), b.params(), sizeof(float) * size_t(a.layout().total)), 0);
  // The parameters and gradients start on 64 bytes, also after a load replaced the parameters
  // (the optimizer's streaming stores into them need it: kernels/adamw.cc).
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.params()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.grads()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.params()) % 64, 0u) << "after load";
  std::vector<float> la, lb;
  LossStats sa = a.forward(batch, &la), sb = b.forward(batch, &lb);
  EXPECT_EQ(sa.ce_sum, sb.ce_sum);
  EXPECT_EQ(sa.mtp_sum, sb.mtp_sum);
  EXPECT_EQ(la, lb);

  // A model of another shape names the first tensor that does not fit.
  ModelConfig wider = c;
  wider.ffn.expert_hidden = 32;
  Transformer w(wider, 1);
  try {
    w.load(path);
    ADD_FAILURE() << "loaded a mismatched file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("layers.0.ffn.experts.0.w1"), std::string::npos) << e.what();
  }
  // A model without the MTP block finds a tensor it does not have.
  Transformer no_mtp(c, 1, false);
  try {
    no_mtp.load(path);
    ADD_FAILURE() << "loaded a file with extra tensors";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mtp.0."), std::string::npos) << e.what();
  }
  // A truncated file.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  std::vector<float> before(b.params(), b.params() + b.layout().total);
  EXPECT_THROW(b.load(path), InputError);
  EXPECT_EQ(std::memcmp(before.data(), b.params(), sizeof(float) * before.size()), 0);  // unchanged
  std::filesystem::remove(path);
  EXPECT_THROW(b.load(path), InputError);
}

TEST(Transformer, GradientsAccumulateAndFollowGradScale) {
  ModelConfig c = test_util::tiny_v4_config("0, 4, 128", 1);
  Transformer m(c, 51);
  Batch batch = two_documents(c, 140, 60, 52);
  const size_t N = size_t(m.layout().total);
  m.zero_grads();
  LossStats s = m.forward_backward(batch);
  std::vector<float> once(m.grads(), m.grads() + N);
  m.forward_backward(batch);  // micro-batches add into grads()
  // (Not bit for bit: rows that several tokens add into, such as the embedding's, are summed in
  // another order the second time.)
  for (size_t i = 0; i < N; ++i) ASSERT_NEAR(m.grads()[i], 2 * once[i], 1e-7f + 1e-5f * std::fabs(once[i])) << i;
  // An explicit grad_scale replaces 1 / counted for the CE and MTP parts; the indexer's part is
  // not scaled, so compare a backbone tensor.
  m.zero_grads();
  m.forward_backward(batch, 0.5f / float(s.counted));
  const ParamInfo* head = m.layout().find("head");
  for (int64_t i = 0; i < head->numel; i += 17)
    EXPECT_NEAR(m.grads()[head->offset + i], 0.5f * once[size_t(head->offset + i)], 1e-6f + 1e-4f * std::fabs(once[size_t(head->offset + i)]));
  const ParamInfo* idx = m.layout().find("layers.1.attn.indexer.wq_b");
  for (int64_t i = 0; i < idx->numel; i += 17)
    EXPECT_NEAR(m.grads()[idx->offset + i], once[size_t(idx->offset + i)], 1e-6f + 1e-4f * std::fabs(once[size_t(idx->offset + i)]));
}

// A step of several micro-batches balances the experts by the load of all of them: the bias
// moves by the sign of (mean - summed load), and zero_grads() starts the next step's count.
TEST(Transformer, RoutingBiasBalancesTheLoadOfEveryMicroBatchOfAStep) {
  ModelConfig c = test_util::tiny_v4_config("0, 4", 0, /*hash_layers=*/0);
  Transformer m(c, 5);
  Batch a = two_documents(c, 40, 24, 1), b = two_documents(c, 30, 30, 2);
  m.zero_grads();
  m.forward_backward(a);
  const auto la = m.expert_load();
  m.forward_backward(b);
  const auto lb = m.expert_load();
  m.forward(a);  // evaluation does not count
  const auto step = m.step_expert_load();
  ASSERT_EQ(step.size(), la.size());
  const int E = c.ffn.routed_experts;
  const float u = float(c.ffn.bias_update_rate);
  auto sign_vs_mean = [&](const std::vector<int64_t>& load, int e) {
    double mean = 0;
    for (int64_t x : load) mean += double(x) / E;
    double diff = mean - double(load[size_t(e)]);
    return (diff > 0) - (diff < 0);
  };
  std::vector<std::vector<float>> want;
  int differs_from_last_batch = 0;  // where balancing by the last micro-batch alone would differ
  for (size_t i = 0; i < step.size(); ++i) {
    for (int e = 0; e < E; ++e) {
      ASSERT_EQ(step[i][size_t(e)], la[i][size_t(e)] + lb[i][size_t(e)]);
      differs_from_last_batch += sign_vs_mean(step[i], e) != sign_vs_mean(lb[i], e);
    }
    const float* bias = m.routing_bias(int(i));
    ASSERT_NE(bias, nullptr);
    want.emplace_back(bias, bias + E);
    for (int e = 0; e < E; ++e) want.back()[size_t(e)] += u * float(sign_vs_mean(step[i], e));
  }
  EXPECT_GT(differs_from_last_batch, 0) << "these batches do not tell the two rules apart";
  m.update_routing_bias();
  for (size_t i = 0; i < step.size(); ++i)
    for (int e = 0; e < E; ++e)
      EXPECT_EQ(m.routing_bias(int(i))[e], want[i][size_t(e)]) << "layer " << i << " expert " << e;
  m.zero_grads();
  for (const auto& layer : m.step_expert_load())
    for (int64_t x : layer) EXPECT_EQ(x, 0);
}

TEST(Transformer, RejectsMalformedBatchesAndConfigs) {
  ModelConfig c = test_util::tiny_v4_config("0, 4", 0);
  Transformer m(c, 1);
  Batch b = two_documents(c, 10, 10, 2);
  Batch bad = b;
  bad.ids[3] = c.vocab;
  EXPECT_THROW(m.forward_backward(bad), InputError);
  bad = b;
  bad.targets[3] = -2;
  EXPECT_THROW(m.forward_backward(bad), InputError);
  bad = b;
  bad.docs = {DocSpan{0, 10}, DocSpan{11, 9}};
  EXPECT_THROW(m.forward_backward(bad), InputError);
  bad = b;
  bad.docs = {DocSpan{0, 10}, DocSpan{10, 5}};
  EXPECT_THROW(m.forward_backward(bad), InputError);
  bad = b;
  bad.targets.pop_back();
  EXPECT_THROW(m.forward_backward(bad), InputError);
  ModelConfig tied = c;
  tied.tie_embeddings = true;
  EXPECT_THROW(Transformer(tied, 1), InputError);
}

TEST(Transformer, LossFallsInAShortTrainingRun) {
  ModelConfig c = test_util::tiny_v4_config("0, 4", 1);
  Transformer m(c, 31);
  Batch batch = two_documents(c, 48, 24, 32);
  // Plain AdamW on every tensor (the optimizer library is tested on its own).
  const int64_t N = m.layout().total;
  std::vector<float> mom(size_t(N), 0.f), var(size_t(N), 0.f);
  double first = 0, last = 0;
  for (int step = 1; step <= 30; ++step) {
    m.zero_grads();
    LossStats s = m.forward_backward(batch);
    ASSERT_TRUE(std::isfinite(s.loss())) << step;
    if (step == 1) first = s.loss();
    last = s.loss();
    m.update_routing_bias();
    const float lr = 1e-2f, b1 = 0.9f, b2 = 0.95f;
    float c1 = 1 - std::pow(b1, float(step)), c2 = 1 - std::pow(b2, float(step));
    for (int64_t i = 0; i < N; ++i) {
      float g = m.grads()[i];
      mom[size_t(i)] = b1 * mom[size_t(i)] + (1 - b1) * g;
      var[size_t(i)] = b2 * var[size_t(i)] + (1 - b2) * g * g;
      m.params()[i] -= lr * (mom[size_t(i)] / c1) / (std::sqrt(var[size_t(i)] / c2) + 1e-8f);
    }
  }
  EXPECT_NEAR(first, std::log(double(c.vocab)), 0.3);  // a fresh model predicts about uniformly
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
}

TEST(Transformer, Bf16PrecisionRoundsWeightsAndActivationsOnly) {
  ModelConfig c = test_util::tiny_v4_config("0, 4", 1);
  Transformer m(c, 41);
  Batch batch = two_documents(c, 40, 30, 42);
  m.zero_grads();
  LossStats f32 = m.forward_backward(batch);
  std::vector<float> g32(m.grads(), m.grads() + m.layout().total);
  std::vector<float> master(m.params(), m.params() + m.layout().total);
  m.set_precision(Precision::kBf16);
  EXPECT_EQ(m.precision(), Precision::kBf16);
  m.zero_grads();
  LossStats b16 = m.forward_backward(batch);
  // The master weights are untouched; the loss moves by bf16's relative precision, not more.
  EXPECT_EQ(std::memcmp(master.data(), m.params(), sizeof(float) * master.size()), 0);
  EXPECT_NE(f32.ce_sum, b16.ce_sum);
  EXPECT_NEAR(b16.loss(), f32.loss(), 2e-2 * f32.loss());
  // Gradients agree in direction (cosine close to 1) though not in every bit.
  double dot = 0, n32 = 0, n16 = 0;
  for (size_t i = 0; i < g32.size(); ++i) {
    dot += double(g32[i]) * m.grads()[i];
    n32 += double(g32[i]) * g32[i];
    n16 += double(m.grads()[i]) * m.grads()[i];
  }
  EXPECT_GT(dot / std::sqrt(n32 * n16), 0.99);
  // Back to fp32: bit for bit the first result.
  m.set_precision(Precision::kFp32);
  m.zero_grads();
  LossStats again = m.forward_backward(batch);
  EXPECT_EQ(again.ce_sum, f32.ce_sum);
  EXPECT_EQ(std::memcmp(g32.data(), m.grads(), sizeof(float) * g32.size()), 0);
}

}  // namespace
}  // namespace trex::model

namespace trex::model {
namespace {

// The gradient-final hook: its ranges are disjoint, cover the layout, come in backward order
// (head and MTP; for the last layer ... the first its FFN, its norms and mHC, its attention;
// embedding), and nothing the rest of the pass does changes a range once reported (each is
// snapshotted at the call and compared with the end result).
TEST(TransformerTest, GradFinalHookReportsCompleteRangesInBackwardOrder) {
  for (int mtp : {1, 0}) {
    SCOPED_TRACE(mtp ? "with MTP" : "without MTP");
    ModelConfig c = test_util::tiny_v4_config("0, 4, 128", mtp);
    Transformer m(c, 7);
    const int64_t n = m.layout().total;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    std::vector<std::vector<float>> snaps;
    m.set_grad_final_hook([&](int64_t lo, int64_t hi) {
      ranges.push_back({lo, hi});
      snaps.emplace_back(m.grads() + lo, m.grads() + hi);
    });
    Batch b = two_documents(c, 150, 130, 3);
    for (int call = 0; call < 2; ++call) {  // the second call adds onto the first's gradient
      ranges.clear();
      snaps.clear();
      m.forward_backward(b);
      ASSERT_EQ(ranges.size(), 3 * size_t(c.layers) + 2) << "head with MTP, 3 per layer, embedding";
      EXPECT_EQ(ranges[0], std::make_pair(m.layout().offset_of("norm"), n));
      for (int l = c.layers - 1, r = 1; l >= 0; --l, r += 3) {
        const std::string p = "layers." + std::to_string(l) + ".";
        const int64_t ffn = m.layout().offset_of(p + "ffn.gate.weight"), tail = m.layout().offset_of(p + "attn_norm");
        const int64_t end = l + 1 < c.layers ? m.layout().offset_of("layers." + std::to_string(l + 1) + ".attn.wq_a")
                                             : m.layout().offset_of("norm");
        EXPECT_EQ(ranges[size_t(r)], std::make_pair(ffn, tail)) << p << "FFN first";
        EXPECT_EQ(ranges[size_t(r + 1)], std::make_pair(tail, end)) << p << "norms and mHC";
        EXPECT_EQ(ranges[size_t(r + 2)], std::make_pair(m.layout().offset_of(p + "attn.wq_a"), ffn)) << p << "attention";
      }
      EXPECT_EQ(ranges.back(), std::make_pair(int64_t(0), m.layout().offset_of("layers.0.attn.wq_a")));
      std::vector<int> covered(static_cast<size_t>(n), 0);
      for (size_t r = 0; r < ranges.size(); ++r) {
        auto [lo, hi] = ranges[r];
        for (int64_t i = lo; i < hi; ++i) ++covered[size_t(i)];
        EXPECT_EQ(std::memcmp(snaps[r].data(), m.grads() + lo, size_t(hi - lo) * sizeof(float)), 0)
            << "range " << r << " [" << lo << ", " << hi << ") changed after it was reported final";
      }
      EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), n) << "every element exactly once";
    }
    m.set_grad_final_hook({});
    m.forward_backward(b);  // no hook: nothing called
    EXPECT_EQ(ranges.size(), 3 * size_t(c.layers) + 2);
  }
}

}  // namespace
}  // namespace trex::model
