// The C++ Transformer against an independent PyTorch implementation of the same model
// (python/trex_v4_torch.py, written from spec/deepseek-v4.md, not from this code), in the manner
// of llm.c's test_gpt2.c: the C++ side initialises the tiny config tests/model/data/v4-tiny.toml
// (layers of ratio 0, 4 and 128, a hash-routed layer, two packed documents of 400 and 240 tokens,
// so the HCA layer has several compressed entries and the CSA layer's queries see far more
// entries than top_k), saves its weights and a batch, runs the Python script, and compares the
// debug state it writes: logits, loss, the indexer loss, the gradient of every parameter, and the
// losses of 10 AdamW steps. A second config adds the MTP block (depth 1, loss weight 0.3).
//
// The reference runs in float64, so every difference measured here is the C++ side's fp32
// rounding (or a disagreement). Both sides keep fp32 weights through the AdamW steps: the C++
// side updates params() in place with the fused AdamW kernel (the optimizer's update, without
// the bf16 copy), PyTorch runs torch.optim.AdamW with the same hyperparameters and groups.
// The routing bias is not updated on either side.
//
// Where /usr/bin/python3 cannot import torch (Debian's python3-torch), the test is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "trex/core/safetensors.h"
#include "trex/kernels/adamw.h"
#include "trex/model/config.h"
#include "trex/model/transformer.h"
#include "trex/util/subprocess.h"

namespace trex::model {
namespace {

namespace fs = std::filesystem;
using core::SafetensorsFile;
using core::StDtype;
using core::StTensorInfo;

constexpr int kAdamSteps = 10;
const kernels::AdamWHyper kHyper{/*lr=*/1e-3f, /*beta1=*/0.9f, /*beta2=*/0.95f, /*eps=*/1e-8f,
                                 /*weight_decay=*/0.1f};

bool have_torch() {
  if (!program_available("/usr/bin/python3")) return false;
  return run_process({"/usr/bin/python3", "-c", "import torch"}).exit_code == 0;
}

// Two documents; the target of a token is the next token of its document, none at a document's
// last token, and a few positions without a target (as SFT masks prompt tokens).
Batch make_batch(const ModelConfig& cfg) {
  Batch b;
  b.docs = {{0, 400}, {400, 240}};
  b.tokens = 640;
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> id(0, cfg.vocab - 1);
  for (int64_t t = 0; t < b.tokens; ++t) b.ids.push_back(id(rng));
  b.targets.assign(b.tokens, -1);
  for (const DocSpan& d : b.docs)
    for (int64_t t = d.begin; t + 1 < d.begin + d.len; ++t)
      if (t % 37 != 5) b.targets[t] = b.ids[t + 1];
  return b;
}

std::vector<float> read_f32(const SafetensorsFile& f, const std::string& name) {
  const StTensorInfo& t = f.get(name);
  EXPECT_EQ(t.dtype, StDtype::kF32) << name;
  std::vector<float> v(t.numel());
  std::span<const std::byte> bytes = f.bytes(t);
  std::memcpy(v.data(), bytes.data(), std::min(bytes.size(), v.size() * sizeof(float)));
  return v;
}

// Norm-wise relative error ||a - b|| / ||b|| (b: the reference); the absolute norm where the
// reference is zero.
double rel_error(const float* a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// The whole comparison for one config file (with its MTP block when it has one).
void cross_check(const std::string& config, const std::string& tmp_dir) {
  auto file = [&tmp_dir](const std::string& name) { return tmp_dir + "/" + name; };
  ModelConfig cfg = load_model_config(config);
  const bool mtp = cfg.mtp_depth > 0;
  Transformer model(cfg, /*seed=*/1234, mtp);
  ASSERT_EQ(model.mtp_enabled(), mtp);
  const ParamLayout& layout = model.layout();
  Batch batch = make_batch(cfg);

  // The inputs of the Python side: the weights as save() writes them, the batch, and the AdamW
  // hyperparameters with the names that take no weight decay.
  model.save(file("weights.safetensors"));
  std::vector<int32_t> doc_lens;
  for (const DocSpan& d : batch.docs) doc_lens.push_back(int32_t(d.len));
  std::string no_decay;
  for (const ParamInfo& p : layout.params)
    if (!p.decay) no_decay += (no_decay.empty() ? "" : ",") + p.name;
  char num[64];
  auto str = [&num](double v) { std::snprintf(num, sizeof num, "%.17g", v); return std::string(num); };
  core::write_safetensors(
      file("batch.safetensors"),
      {{"ids", StDtype::kI32, {batch.tokens}, batch.ids.data(), {}},
       {"targets", StDtype::kI32, {batch.tokens}, batch.targets.data(), {}},
       {"doc_lens", StDtype::kI32, {int64_t(doc_lens.size())}, doc_lens.data(), {}}},
      {{"lr", str(kHyper.lr)}, {"beta1", str(kHyper.beta1)}, {"beta2", str(kHyper.beta2)},
       {"eps", str(kHyper.eps)}, {"weight_decay", str(kHyper.weight_decay)}, {"no_decay", no_decay}});

  ProcessOptions po;
  po.timeout_s = 600;  // a hang, not a speed limit: the reference takes about 10-30 s
  ProcessResult r = run_process(
      {"/usr/bin/python3", std::string(TREX_SOURCE_DIR) + "/python/trex_v4_torch.py", "debug-state",
       "--config", config, "--weights", file("weights.safetensors"), "--batch",
       file("batch.safetensors"), "--out", file("debug.safetensors"), "--steps",
       std::to_string(kAdamSteps), "--dtype", "float64"},
      po);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  SafetensorsFile ref(file("debug.safetensors"));

  // Forward: logits and losses.
  std::vector<float> logits;
  LossStats fwd = model.forward(batch, &logits);
  const double ref_loss = read_f32(ref, "loss")[0];
  const double ref_idx = read_f32(ref, "indexer_loss")[0];
  EXPECT_EQ(fwd.counted, int64_t(read_f32(ref, "counted")[0]));
  // fp32 against float64 through 3 layers with 4 mHC streams: the loss agrees to a few fp32 ulps
  // (measured about 2e-8).
  const double loss_err = std::abs(fwd.loss() - ref_loss) / ref_loss;
  EXPECT_LT(loss_err, 1e-6) << fwd.loss() << " vs " << ref_loss;
  const double idx_err = std::abs(fwd.indexer_loss - ref_idx) / std::max(ref_idx, 1e-12);
  // The KL loss is a sum of small differences of logs (about 0.1 here): a looser bound.
  EXPECT_LT(idx_err, 1e-5) << fwd.indexer_loss << " vs " << ref_idx;
  std::vector<float> ref_logits = read_f32(ref, "logits");
  ASSERT_EQ(logits.size(), ref_logits.size());
  const double logits_err = rel_error(logits.data(), ref_logits);
  EXPECT_LT(logits_err, 1e-5);  // measured about 1e-7
  EXPECT_EQ(fwd.mtp_counted, int64_t(read_f32(ref, "mtp_counted")[0]));
  const double ref_mtp = read_f32(ref, "mtp_sum")[0];
  const double mtp_err = mtp ? std::abs(fwd.mtp_sum - ref_mtp) / ref_mtp : std::abs(fwd.mtp_sum - ref_mtp);
  EXPECT_LT(mtp_err, 1e-6) << fwd.mtp_sum << " vs " << ref_mtp;

  // Backward: every parameter's gradient (of the mean CE plus the indexer's KL loss).
  model.zero_grads();
  LossStats fb = model.forward_backward(batch);
  EXPECT_NEAR(fb.loss(), fwd.loss(), 1e-6 * fwd.loss());
  std::vector<std::pair<double, std::string>> errs;
  for (const ParamInfo& p : layout.params) {
    std::vector<float> g = read_f32(ref, "grads." + p.name);
    ASSERT_EQ(int64_t(g.size()), p.numel) << p.name;
    const double e = rel_error(model.grads() + p.offset, g);
    // fp32 rounding through the whole backward. The largest errors are in the gradients that
    // are sums over all tokens of cancelling terms (the mHC heads' base, scale and fn: 8e-5 for
    // the main head, 3e-4 for the MTP head); the median tensor is near 5e-7. 2e-3 leaves a margin
    // for other thread counts while a wrong formula gives O(1e-2) and more (an off-by-one in
    // the compressed entries' visibility: median 0.1, worst 1.2).
    EXPECT_LT(e, 2e-3) << p.name;
    errs.emplace_back(e, p.name);
  }
  std::sort(errs.rbegin(), errs.rend());
  std::string worst_list;
  for (size_t i = 0; i < std::min<size_t>(4, errs.size()); ++i) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s%s %.1e", i ? ", " : "", errs[i].second.c_str(), errs[i].first);
    worst_list += buf;
  }
  const double median_err = errs[errs.size() / 2].first;

  // 10 AdamW steps with fp32 weights on both sides.
  std::vector<float> ref_steps = read_f32(ref, "step_losses");
  std::vector<float> ref_idx_steps = read_f32(ref, "step_indexer_losses");
  ASSERT_EQ(int(ref_steps.size()), kAdamSteps);
  Transformer trained(cfg, /*seed=*/1234, mtp);
  trained.load(file("weights.safetensors"));
  const int64_t n = layout.total;
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  kernels::AdamWHyper no_wd = kHyper;
  no_wd.weight_decay = 0;
  double worst_step = 0, worst_idx_step = 0;
  for (int step = 1; step <= kAdamSteps; ++step) {
    trained.zero_grads();
    LossStats st = trained.forward_backward(batch);
    const double e = std::abs(st.loss() - ref_steps[step - 1]) / ref_steps[step - 1];
    const double ei = std::abs(st.indexer_loss - ref_idx_steps[step - 1]) /
                      std::max<double>(ref_idx_steps[step - 1], 1e-12);
    worst_step = std::max(worst_step, e);
    worst_idx_step = std::max(worst_idx_step, ei);
    // Adam divides by sqrt(v): where a gradient element is near zero, fp32 noise changes the
    // update's direction, so the trajectories may drift apart by more than the forward's
    // rounding (measured: no drift beyond 1e-7 in the CE, a few 1e-6 in the KL loss).
    EXPECT_LT(e, 1e-6) << "step " << step << ": " << st.loss() << " vs " << ref_steps[step - 1];
    EXPECT_LT(ei, 1e-4) << "step " << step;
    const kernels::AdamWScalars s_wd = kernels::adamw_scalars(kHyper, step);
    const kernels::AdamWScalars s_no = kernels::adamw_scalars(no_wd, step);
    for (const ParamInfo& p : layout.params)
      kernels::adamw_update(p.decay ? s_wd : s_no, trained.params() + p.offset, m.data() + p.offset,
                            v.data() + p.offset, trained.grads() + p.offset, nullptr, p.numel);
  }
  EXPECT_LT(ref_steps.back(), ref_steps.front());  // the steps train

  std::printf(
      "[ torch ref ] %s: loss %.7f vs %.7f (rel %.1e); MTP CE sum rel %.1e; indexer loss %.5f (rel %.1e); logits rel %.1e; "
      "gradients of %zu tensors: median rel %.1e, worst %s; 10 AdamW steps: loss %.4f -> %.4f, worst rel "
      "%.1e, indexer loss worst rel %.1e\n",
      cfg.name.c_str(), fwd.loss(), ref_loss, loss_err, mtp_err, ref_idx, idx_err, logits_err, errs.size(), median_err,
      worst_list.c_str(), ref_steps.front(), ref_steps.back(), worst_step, worst_idx_step);
}

class TorchReference : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trex_torch_ref_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TorchReference, LogitsLossGradientsAndAdamWLossesMatchPyTorch) {
  if (!have_torch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian python3-torch)";
  cross_check(std::string(TREX_SOURCE_DIR) + "/tests/model/data/v4-tiny.toml", dir_.string());
}

TEST_F(TorchReference, WithTheMtpBlockMatchesPyTorch) {
  if (!have_torch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian python3-torch)";
  cross_check(std::string(TREX_SOURCE_DIR) + "/tests/model/data/v4-tiny-mtp.toml", dir_.string());
}

}  // namespace
}  // namespace trex::model
