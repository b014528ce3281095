// AttentionLayer against finite differences (every parameter tensor and the input, ratios 0, 4
// and 128), document packing, gradient accumulation and short sequences.
//
// Shapes are nano-like but smaller (d 32, 4 heads of 16, window 8, indexer 2 x 8 with top-3),
// so that every path is exercised (window-only queries, partial blocks, v_t < k, top-k over
// more entries than k) and the whole program stays fast.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "trex/model/attention.h"
#include "trex/model/packed_weights.h"
#include "trex/model/config.h"
#include "trex/util/error.h"
#include "model/tiny_config.h"

namespace trex::model {
namespace {

ModelConfig small_config() {
  ModelConfig c = test_util::shrunk_nano_config();
  c.indexer.loss_weight = 0.5;
  return c;
}

int layer_of_ratio(int ratio) { return ratio == 0 ? 0 : ratio == 4 ? 1 : 2; }

// The tensors of one layer, owned, with their spec names and sizes.
struct Tensor {
  std::string name;
  std::vector<float> value;
  bool indexer = false;
};

template <class P>
std::vector<P*> fields(AttentionTensors<P>& t) {
  return {&t.wq_a,     &t.q_norm,     &t.wq_b,      &t.wkv,           &t.kv_norm,
          &t.attn_sink, &t.wo_a,      &t.wo_b,      &t.comp_wkv,      &t.comp_wgate,
          &t.comp_ape, &t.comp_norm,  &t.idx_wq_b,  &t.idx_weights_proj, &t.idx_comp_wkv,
          &t.idx_comp_wgate, &t.idx_comp_ape, &t.idx_comp_norm};
}

struct LayerTensors {
  std::vector<Tensor> t;  // in fields() order; empty value = absent

  LayerTensors(const ModelConfig& c, int ratio, uint64_t seed, bool zero = false) {
    const int64_t d = c.hidden, qlr = c.attention.q_lora_rank, H = c.attention.heads,
                  hd = c.attention.head_dim, G = c.attention.o_groups,
                  olr = c.attention.o_lora_rank, IH = c.indexer.heads, Ihd = c.indexer.head_dim;
    const int64_t cw = ratio == 4 ? 2 * hd : hd;
    struct Spec { const char* name; int64_t rows, cols; int kind; bool indexer; };
    // kind: 0 matrix (scale 1/sqrt(cols)), 1 norm weight (about 1), 2 free (sink, ape).
    std::vector<Spec> specs = {
        {"wq_a", qlr, d, 0, false},       {"q_norm", 1, qlr, 1, false},
        {"wq_b", H * hd, qlr, 0, false},  {"wkv", hd, d, 0, false},
        {"kv_norm", 1, hd, 1, false},     {"attn_sink", 1, H, 2, false},
        {"wo_a", G * olr, H * hd / G, 0, false}, {"wo_b", d, G * olr, 0, false},
        {"comp_wkv", ratio > 0 ? cw : 0, d, 0, false},
        {"comp_wgate", ratio > 0 ? cw : 0, d, 0, false},
        {"comp_ape", ratio > 0 ? ratio : 0, cw, 2, false},
        {"comp_norm", ratio > 0 ? 1 : 0, hd, 1, false},
        {"idx_wq_b", ratio == 4 ? IH * Ihd : 0, qlr, 0, true},
        {"idx_weights_proj", ratio == 4 ? IH : 0, d, 0, true},
        {"idx_comp_wkv", ratio == 4 ? 2 * Ihd : 0, d, 0, true},
        {"idx_comp_wgate", ratio == 4 ? 2 * Ihd : 0, d, 0, true},
        {"idx_comp_ape", ratio == 4 ? 4 : 0, 2 * Ihd, 2, true},
        {"idx_comp_norm", ratio == 4 ? 1 : 0, Ihd, 1, true}};
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (const Spec& s : specs) {
      Tensor x{s.name, std::vector<float>(size_t(s.rows * s.cols)), s.indexer};
      if (!zero)
        for (float& v : x.value) {
          float z = nd(rng);
          v = s.kind == 0 ? z / std::sqrt(float(s.cols)) : s.kind == 1 ? 1.f + 0.2f * z : 0.5f * z;
        }
      t.push_back(std::move(x));
    }
  }
  AttentionParams params() const {
    AttentionParams p;
    std::vector<const float**> f = fields(p);
    for (size_t i = 0; i < t.size(); ++i)
      if (!t[i].value.empty()) *f[i] = t[i].value.data();
    return p;
  }
  AttentionGrads grads() {
    AttentionGrads g;
    std::vector<float**> f = fields(g);
    for (size_t i = 0; i < t.size(); ++i)
      if (!t[i].value.empty()) *f[i] = t[i].value.data();
    return g;
  }
};

std::vector<float> random_vector(int64_t n, uint64_t seed, float scale = 1.f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

std::vector<DocSpan> spans(const std::vector<int64_t>& lens) {
  std::vector<DocSpan> d;
  int64_t b = 0;
  for (int64_t l : lens) {
    d.push_back({b, l});
    b += l;
  }
  return d;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

struct Probe {
  AttentionLayer& layer;
  const LayerTensors& w;
  const std::vector<float>& x;
  const std::vector<float>& R;
  std::vector<DocSpan> docs;
  int64_t T, d;
  std::vector<int32_t> selection;
  // <R, out> and L_I of one forward; `selection` is the indexer's (or dense) choice.
  std::pair<double, double> eval() {
    std::vector<float> out(size_t(T * d));
    double li = layer.forward(w.params(), x.data(), docs, T, out.data());
    selection = layer.last_selection();
    return {dot(R, out), li};
  }
};

// Central difference along `dir` of L (or of L_I for indexer tensors) against <grad, dir>.
// A perturbation that changes the selection makes L jump: those checks are skipped and counted.
struct FdResult { int checked = 0, flipped = 0; };

// The central difference is Richardson-extrapolated, (4 D(eps/2) - D(eps)) / 3, so that eps can
// be large enough for the change of L to stand well above the fp32 rounding of L (summed over
// T d outputs) while the O(eps^2) error cancels. eps is relative to the tensor's RMS: 2e-2 along
// a random direction, 5e-2 for a single element (whose effect on L is far smaller). The absolute
// tolerance is 2e-3 |grad of the tensor| for both: a single element's check is sharp for the
// largest element and loose for small ones.
// Two discontinuities are stepped around by retrying at eps / 4 and eps / 16: a perturbation that
// flips a selection (L jumps; skipped and counted when every eps flips), and for L_I a ReLU kink
// of some <qI_h, kI_i> inside [-eps, eps], which bends the difference by O(1) of that term (a
// wrong gradient fails at every eps).
void check_direction(Probe& probe, std::vector<float>& value, const std::vector<float>& dir,
                     double analytic, double grad_norm, bool use_li, const std::string& what,
                     FdResult& r, double eps_rel = 2e-2) {
  double rms = 0;
  for (float v : value) rms += double(v) * v;
  rms = std::max(0.05, std::sqrt(rms / double(value.size())));
  const std::vector<float> saved = value;
  probe.eval();
  const std::vector<int32_t> base_sel = probe.selection;
  // Central difference at eps; false when the selection changed.
  auto central = [&](double eps, double* out) {
    for (size_t i = 0; i < value.size(); ++i) value[i] = saved[i] + float(eps) * dir[i];
    auto [lp, lip] = probe.eval();
    bool flip = probe.selection != base_sel;
    for (size_t i = 0; i < value.size(); ++i) value[i] = saved[i] - float(eps) * dir[i];
    auto [lm, lim] = probe.eval();
    flip = flip || probe.selection != base_sel;
    value = saved;
    *out = use_li ? (lip - lim) / (2 * eps) : (lp - lm) / (2 * eps);
    return !flip;
  };
  const double shrinks[] = {1.0, 0.25, 0.0625};
  for (double shrink : shrinks) {
    const double eps = eps_rel * rms * shrink;
    double d1 = 0, d2 = 0;
    if (!central(eps, &d1) || !central(eps / 2, &d2)) continue;
    const double numeric = (4 * d2 - d1) / 3;
    const double tol = 2e-2 * std::abs(numeric) + 2e-3 * grad_norm / shrink + 1e-7;
    const bool last = shrink == shrinks[2];
    if (use_li && !last && std::abs(analytic - numeric) > tol) continue;
    ++r.checked;
    EXPECT_NEAR(analytic, numeric, tol)
        << what << " (eps " << eps << ", |grad| " << grad_norm << ")";
    return;
  }
  ++r.flipped;
  if (std::getenv("TREX_FD_VERBOSE")) std::printf("selection flip: %s\n", what.c_str());
}

// Gradients of L = <R, out> (backbone) and of L_I (indexer tensors) by one backward.
struct Analytic {
  LayerTensors g;
  std::vector<float> dx;
};
Analytic analytic(const ModelConfig& c, int ratio, AttentionLayer& layer, const LayerTensors& w,
                  const std::vector<float>& x, const std::vector<float>& R,
                  const std::vector<DocSpan>& docs, int64_t T) {
  Analytic a{LayerTensors(c, ratio, 0, /*zero=*/true), std::vector<float>(size_t(T * c.hidden))};
  std::vector<float> out(size_t(T * c.hidden));
  layer.forward(w.params(), x.data(), docs, T, out.data());
  layer.backward(w.params(), R.data(), a.dx.data(), a.g.grads());
  return a;
}

int64_t largest(const std::vector<float>& g) {
  int64_t best = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (std::abs(g[i]) > std::abs(g[size_t(best)])) best = int64_t(i);
  return best;
}

void finite_difference_check(int ratio, const std::vector<int64_t>& lens, uint64_t seed) {
  ModelConfig c = small_config();
  AttentionLayer layer(c, layer_of_ratio(ratio));
  ASSERT_EQ(layer.ratio(), ratio);
  LayerTensors w(c, ratio, seed);
  const std::vector<DocSpan> docs = spans(lens);
  int64_t T = 0;
  for (int64_t l : lens) T += l;
  const int64_t d = c.hidden;
  std::vector<float> x = random_vector(T * d, seed + 1);
  std::vector<float> R = random_vector(T * d, seed + 2);
  Analytic a = analytic(c, ratio, layer, w, x, R, docs, T);
  Probe probe{layer, w, x, R, docs, T, d, {}};
  FdResult r;
  uint64_t dir_seed = seed * 1000;

  // The input.
  {
    std::vector<float> dir = random_vector(T * d, ++dir_seed);
    double gn = std::sqrt(dot(a.dx, a.dx));
    check_direction(probe, x, dir, dot(a.dx, dir), gn, false, "dx", r);
    for (int64_t e : {largest(a.dx), T * d / 2 + 3, T * d - 1}) {
      std::vector<float> unit(size_t(T * d), 0.f);
      unit[size_t(e)] = 1.f;
      check_direction(probe, x, unit, a.dx[size_t(e)], gn, false,
                      "dx[" + std::to_string(e) + "]", r, 5e-2);
    }
  }
  // Every parameter tensor: a random direction, its largest gradient element and one other.
  LayerTensors& wm = const_cast<LayerTensors&>(w);
  for (size_t k = 0; k < wm.t.size(); ++k) {
    Tensor& tensor = wm.t[k];
    if (tensor.value.empty()) continue;
    const std::vector<float>& gv = a.g.t[k].value;
    const int64_t n = int64_t(tensor.value.size());
    std::vector<float> dir = random_vector(n, ++dir_seed);
    const double gn = std::sqrt(dot(gv, gv));
    check_direction(probe, tensor.value, dir, dot(gv, dir), gn, tensor.indexer, tensor.name, r);
    for (int64_t e : {largest(gv), n / 2}) {
      std::vector<float> unit(size_t(n), 0.f);
      unit[size_t(e)] = 1.f;
      check_direction(probe, tensor.value, unit, gv[size_t(e)], gn,
                      tensor.indexer, tensor.name + "[" + std::to_string(e) + "]", r, 5e-2);
    }
  }
  // Flips are possible only where a selection exists; most checks must have run.
  EXPECT_GE(r.checked, 4 * (r.checked + r.flipped) / 5)
      << r.flipped << " of " << r.checked + r.flipped << " checks skipped for selection flips";
}

TEST(AttentionLayer, FiniteDifferencesRatio0) { finite_difference_check(0, {29}, 11); }
TEST(AttentionLayer, FiniteDifferencesRatio4PackedDocuments) {
  finite_difference_check(4, {37, 22}, 12);
}
TEST(AttentionLayer, FiniteDifferencesRatio128) { finite_difference_check(128, {290}, 13); }
// (d): shorter than the window, not a multiple of the ratio, documents without entries.
TEST(AttentionLayer, FiniteDifferencesShortSequences) {
  finite_difference_check(0, {5, 3}, 21);
  finite_difference_check(4, {6, 2, 7}, 22);
  finite_difference_check(128, {131, 9}, 23);
}

// (b): a packed batch gives exactly what each document gives alone; its gradients are the sums.
void packing_check(int ratio, const std::vector<int64_t>& lens) {
  ModelConfig c = small_config();
  const int64_t d = c.hidden;
  LayerTensors w(c, ratio, 31);
  int64_t T = 0;
  for (int64_t l : lens) T += l;
  std::vector<float> x = random_vector(T * d, 32), R = random_vector(T * d, 33);
  AttentionLayer packed(c, layer_of_ratio(ratio));
  std::vector<float> out(size_t(T * d)), dx(size_t(T * d));
  LayerTensors g(c, ratio, 0, true);
  double li = packed.forward(w.params(), x.data(), spans(lens), T, out.data());
  packed.backward(w.params(), R.data(), dx.data(), g.grads());

  // Each document alone; its indexer gradients are weighted by its share of the rows with a
  // selection, since L_I of the batch is the mean over those rows.
  std::vector<LayerTensors> g_doc;
  std::vector<int64_t> rows_doc;
  double li_weighted = 0;
  int64_t rows_total = 0, b = 0;
  for (int64_t len : lens) {
    AttentionLayer alone(c, layer_of_ratio(ratio));
    std::vector<float> o1(size_t(len * d)), dx1(size_t(len * d));
    g_doc.emplace_back(c, ratio, 0, true);
    double li1 = alone.forward(w.params(), x.data() + b * d, spans({len}), len, o1.data());
    alone.backward(w.params(), R.data() + b * d, dx1.data(), g_doc.back().grads());
    for (int64_t i = 0; i < len * d; ++i) {
      ASSERT_EQ(out[size_t(b * d + i)], o1[size_t(i)]) << "out, token " << b + i / d;
      ASSERT_EQ(dx[size_t(b * d + i)], dx1[size_t(i)]) << "dx, token " << b + i / d;
    }
    int64_t rows = 0;
    if (ratio == 4) {
      std::vector<int32_t> sel = alone.last_selection();
      const int64_t k = int64_t(sel.size()) / len;
      for (int64_t t = 0; t < len && k > 0; ++t) rows += sel[size_t(t * k)] >= 0 ? 1 : 0;
    }
    rows_doc.push_back(rows);
    li_weighted += li1 * double(rows);
    rows_total += rows;
    b += len;
  }
  LayerTensors g_sum(c, ratio, 0, true);
  for (size_t j = 0; j < g_doc.size(); ++j)
    for (size_t k = 0; k < g_sum.t.size(); ++k) {
      const double wgt = g_sum.t[k].indexer ? double(rows_doc[j]) / double(rows_total) : 1.0;
      for (size_t i = 0; i < g_sum.t[k].value.size(); ++i)
        g_sum.t[k].value[i] += float(wgt * g_doc[j].t[k].value[i]);
    }
  if (rows_total > 0) {
    EXPECT_NEAR(li, li_weighted / double(rows_total), 1e-6 * std::abs(li) + 1e-9);
  }
  for (size_t k = 0; k < g.t.size(); ++k)
    for (size_t i = 0; i < g.t[k].value.size(); ++i) {
      const float a = g.t[k].value[i], e = g_sum.t[k].value[i];
      ASSERT_NEAR(a, e, 1e-4f * (std::abs(e) + 1.f)) << g.t[k].name << "[" << i << "]";
    }
}

TEST(AttentionLayer, PackedDocumentsEqualSeparateRuns) {
  packing_check(0, {20, 13});
  packing_check(4, {23, 18, 3});
  packing_check(128, {260, 140});
}

// (c): parameter gradients accumulate; dx is overwritten. (Not bit-exact: a GEMM longer than
// one KC block adds its partial sums into the existing gradient one block at a time.)
TEST(AttentionLayer, GradientsAccumulateAcrossBackwardCalls) {
  for (int ratio : {0, 4, 128}) {
    ModelConfig c = small_config();
    const int64_t d = c.hidden, T = ratio == 128 ? 270 : 30;
    LayerTensors w(c, ratio, 41);
    std::vector<float> x = random_vector(T * d, 42), R = random_vector(T * d, 43);
    AttentionLayer layer(c, layer_of_ratio(ratio));
    std::vector<float> out(size_t(T * d)), dx1(size_t(T * d)), dx2(size_t(T * d), 7.f);
    LayerTensors once(c, ratio, 0, true), twice(c, ratio, 0, true);
    layer.forward(w.params(), x.data(), spans({T}), T, out.data());
    layer.backward(w.params(), R.data(), dx1.data(), once.grads());
    layer.backward(w.params(), R.data(), dx2.data(), twice.grads());
    layer.backward(w.params(), R.data(), dx2.data(), twice.grads());
    EXPECT_EQ(dx1, dx2) << "ratio " << ratio;
    for (size_t k = 0; k < once.t.size(); ++k) {
      double nrm = 0;
      for (size_t i = 0; i < once.t[k].value.size(); ++i) {
        const float e = 2.f * once.t[k].value[i];
        ASSERT_NEAR(twice.t[k].value[i], e, 1e-5f * std::abs(e) + 1e-7f)
            << once.t[k].name << "[" << i << "]";
        nrm += std::abs(once.t[k].value[i]);
      }
      if (!once.t[k].value.empty()) {
        EXPECT_GT(nrm, 0.0) << once.t[k].name << " got no gradient";
      }
    }
  }
}

// Incremental decoding with a cache gives the forward's output at every position: past the
// window, across ratio-4 and ratio-128 block boundaries, with the indexer choosing among more
// entries than top_k.
TEST(AttentionLayer, DecodeMatchesForwardAtEveryPosition) {
  for (int ratio : {0, 4, 128}) {
    ModelConfig c = small_config();
    const int64_t d = c.hidden, T = ratio == 128 ? 300 : 45;
    LayerTensors w(c, ratio, 61);
    std::vector<float> x = random_vector(T * d, 62);
    AttentionLayer layer(c, layer_of_ratio(ratio));
    std::vector<float> full(static_cast<size_t>(T * d)), step(static_cast<size_t>(d));
    layer.forward(w.params(), x.data(), spans({T}), T, full.data());
    AttentionCache cache;
    for (int64_t t = 0; t < T; ++t) {
      layer.decode(w.params(), x.data() + t * d, cache, step.data());
      ASSERT_EQ(cache.len, t + 1);
      double err = 0, ref = 0;
      for (int64_t e = 0; e < d; ++e) {
        err = std::max(err, double(std::abs(step[size_t(e)] - full[size_t(t * d + e)])));
        ref = std::max(ref, double(std::abs(full[size_t(t * d + e)])));
      }
      ASSERT_LE(err, 1e-4 * ref + 1e-6) << "ratio " << ratio << ", position " << t;
    }
    EXPECT_EQ(int64_t(cache.comp.size()), ratio > 0 ? T / ratio * c.attention.head_dim : 0);
  }
}

// A prompt prefilled at once leaves the cache as token-by-token decoding would: the tokens
// decoded after it match the forward too (prompt lengths that end inside a block). Also with a
// decoder's packed weights, whose copies a prompt of up to kPackedPrefillTokens tokens
// projects on (the 190-token prompt runs its GEMMs either way).
TEST(AttentionLayer, PrefillThenDecodeMatchesForward) {
  for (int ratio : {0, 4, 128}) {
    for (bool with_packed : {false, true}) {
      for (int64_t P : {ratio == 128 ? int64_t(190) : int64_t(13), int64_t(AttentionLayer::kPackedPrefillTokens)}) {
        SCOPED_TRACE("ratio " + std::to_string(ratio) + (with_packed ? ", packed" : "") +
                     ", prompt " + std::to_string(P));
        ModelConfig c = small_config();
        const int64_t d = c.hidden, T = ratio == 128 ? 300 : AttentionLayer::kPackedPrefillTokens + 13;
        LayerTensors w(c, ratio, 71);
        std::vector<float> x = random_vector(T * d, 72);
        AttentionLayer layer(c, layer_of_ratio(ratio));
        std::vector<float> full(static_cast<size_t>(T * d)), pre(static_cast<size_t>(P * d)),
            step(static_cast<size_t>(d));
        layer.forward(w.params(), x.data(), spans({T}), T, full.data());
        AttentionCache cache;
        PackedWeights packed;
        layer.prefill(w.params(), x.data(), P, cache, pre.data(), with_packed ? &packed : nullptr);
        ASSERT_EQ(cache.len, P);
        // The packed copies were used exactly when the prompt is short enough.
        EXPECT_EQ(packed.bytes() > 0, with_packed && P <= AttentionLayer::kPackedPrefillTokens);
        auto check = [&](const float* got, int64_t t) {
          double err = 0, ref = 0;
          for (int64_t e = 0; e < d; ++e) {
            err = std::max(err, double(std::abs(got[e] - full[size_t(t * d + e)])));
            ref = std::max(ref, double(std::abs(full[size_t(t * d + e)])));
          }
          ASSERT_LE(err, 1e-4 * ref + 1e-6) << "position " << t;
        };
        for (int64_t t = 0; t < P; ++t) check(pre.data() + t * d, t);
        for (int64_t t = P; t < T; ++t) {
          layer.decode(w.params(), x.data() + t * d, cache, step.data());
          check(step.data(), t);
        }
      }
    }
  }
}

TEST(AttentionLayer, RejectsSpansThatDoNotTileTheBatch) {
  ModelConfig c = small_config();
  LayerTensors w(c, 0, 51);
  AttentionLayer layer(c, 0);
  std::vector<float> x(size_t(10 * c.hidden), 0.1f), out(x.size());
  std::vector<DocSpan> gap = {{0, 4}, {5, 5}};
  EXPECT_THROW(layer.forward(w.params(), x.data(), gap, 10, out.data()), InputError);
  std::vector<DocSpan> short_cover = {{0, 4}, {4, 5}};
  EXPECT_THROW(layer.forward(w.params(), x.data(), short_cover, 10, out.data()), InputError);
}

}  // namespace
}  // namespace trex::model
