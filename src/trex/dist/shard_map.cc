#include "trex/dist/shard_map.h"

#include <algorithm>
#include <functional>
#include <string>

namespace trex::dist {
namespace {

// Appends to out[x] share x of `parts` equal consecutive shares of the runs' elements (flat order).
void split_runs(const std::vector<ShardRange>& runs, int parts, const std::function<void(int, ShardRange)>& give) {
  int64_t total = 0;
  for (const ShardRange& r : runs) total += r.size();
  if (total == 0) return;
  const int64_t per = (total + parts - 1) / parts;
  int64_t seen = 0;  // elements of the runs before r
  for (const ShardRange& r : runs) {
    int64_t at = r.begin;
    while (at < r.end) {
      const int64_t k = seen + (at - r.begin);  // position of `at` among the runs' elements
      const int x = int(k / per);
      const int64_t stop = std::min(r.end, at + ((int64_t(x) + 1) * per - k));
      give(x, {at, stop});
      at = stop;
    }
    seen += r.size();
  }
}

}  // namespace

ShardRange shard_of(int64_t n, int ranks, int q) {
  const int64_t chunks = (n + kNormChunk - 1) / kNormChunk;
  const int64_t per = (chunks + ranks - 1) / ranks * kNormChunk;
  ShardRange s;
  s.begin = std::min(n, int64_t(q) * per);
  s.end = std::min(n, s.begin + per);
  return s;
}

ShardMap::ShardMap(const model::Transformer& model, const ParallelLayout& L, int world) {
  n_ = model.layout().total;
  const int R = world;
  std::vector<std::vector<ShardRange>> raw(static_cast<size_t>(R));
  if (R == 1 || L.ep * L.etp == 1) {
    for (int q = 0; q < R; ++q) raw[size_t(q)].push_back(shard_of(n_, R, q));
  } else {
    // The runs of the flat vector each (EP index, ETP index) group of experts computes.
    const model::ModelConfig& c = model.config();
    const int64_t f = c.ffn.expert_hidden, d = c.hidden, fs = f / L.etp, fsd = fs * d;
    const int El = c.ffn.routed_experts / L.ep;
    std::vector<std::vector<ShardRange>> group(static_cast<size_t>(L.ep * L.etp));
    std::vector<ShardRange> experts;
    for (int i = 0; i < model.moe_layers(); ++i)
      for (int e = 0; e < c.ffn.routed_experts; ++e) {
        const std::string ex = model.moe_prefix(i) + "ffn.experts." + std::to_string(e) + ".";
        const int64_t w1 = model.layout().offset_of(ex + "w1"), w2 = model.layout().offset_of(ex + "w2"),
                      w3 = model.layout().offset_of(ex + "w3");
        for (int j = 0; j < L.etp; ++j) {
          std::vector<ShardRange>& g = group[size_t((e / El) * L.etp + j)];
          // Width shard j of expert e: rows [j fs, (j + 1) fs) of w1 and w3, those columns of w2.
          g.push_back({w1 + j * fsd, w1 + (j + 1) * fsd});
          if (L.etp == 1)
            g.push_back({w2, w2 + fsd});
          else
            for (int64_t row = 0; row < d; ++row) g.push_back({w2 + row * f + j * fs, w2 + row * f + (j + 1) * fs});
          g.push_back({w3 + j * fsd, w3 + (j + 1) * fsd});
        }
      }
    auto by_begin = [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; };
    for (std::vector<ShardRange>& g : group) {
      std::sort(g.begin(), g.end(), by_begin);
      experts.insert(experts.end(), g.begin(), g.end());
    }
    std::sort(experts.begin(), experts.end(), by_begin);
    // Dense: everything else, over every rank.
    std::vector<ShardRange> dense;
    int64_t at = 0;
    for (const ShardRange& r : experts) {
      if (r.begin > at) dense.push_back({at, r.begin});
      at = r.end;
    }
    if (at < n_) dense.push_back({at, n_});
    split_runs(dense, R, [&](int x, ShardRange s) { raw[size_t(x)].push_back(s); });
    for (int ep = 0; ep < L.ep; ++ep)
      for (int j = 0; j < L.etp; ++j)
        split_runs(group[size_t(ep * L.etp + j)], L.dp,
                   [&](int x, ShardRange s) { raw[size_t(L.rank_of(x, ep, j))].push_back(s); });
  }
  ranges_.resize(size_t(R));
  sizes_.assign(size_t(R), 0);
  starts_.resize(size_t(R));
  for (int q = 0; q < R; ++q) {
    std::vector<ShardRange>& in = raw[size_t(q)];
    std::sort(in.begin(), in.end(), [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; });
    std::vector<ShardRange>& out = ranges_[size_t(q)];
    for (const ShardRange& r : in) {
      if (r.size() <= 0) continue;
      if (!out.empty() && out.back().end == r.begin)
        out.back().end = r.end;
      else
        out.push_back(r);
    }
    starts_[size_t(q)].push_back(0);
    for (const ShardRange& r : out) {
      runs_.push_back({r.begin, r.end, q, sizes_[size_t(q)]});
      sizes_[size_t(q)] += r.size();
      starts_[size_t(q)].push_back(sizes_[size_t(q)]);
    }
  }
  std::sort(runs_.begin(), runs_.end(), [](const OwnedRun& a, const OwnedRun& b) { return a.begin < b.begin; });
}

size_t ShardMap::run_index(int64_t i) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), i, [](int64_t v, const OwnedRun& r) { return v < r.begin; });
  return size_t(it - runs_.begin()) - 1;
}

int64_t ShardMap::packed_below(int q, int64_t x) const {
  const std::vector<ShardRange>& rs = ranges_[size_t(q)];
  const size_t k = size_t(std::upper_bound(rs.begin(), rs.end(), x, [](int64_t v, const ShardRange& r) { return v < r.end; }) -
                          rs.begin());
  return starts_[size_t(q)][k] + (k < rs.size() ? std::max<int64_t>(0, x - rs[k].begin) : 0);
}

ShardRange ShardMap::packed_within(int q, int64_t lo, int64_t hi) const { return {packed_below(q, lo), packed_below(q, hi)}; }

}  // namespace trex::dist
