// The skill prior (see prior.h).
#include "trex/aura/prior.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>

#include "trex/aura/choice_ip.h"
#include "trex/aura/diagnose.h"
#include "trex/kernels/tuning_builtins.h"
#include "trex/util/error.h"

namespace trex::aura {

namespace {

constexpr double kPerStep = 0.02;  // an inexact match: 2% per index step away

int index_steps(const std::vector<int>& a, const std::vector<int>& b) {
  int d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += std::abs(a[i] - b[i]);
  return d;
}

const SpaceParam* find_param(const TuneTarget& t, const std::string& name) {
  for (const SpaceParam& p : t.space)
    if (p.name == name) return &p;
  return nullptr;
}

// A positive value in log2 units as it lands in the target under a transfer (-1 absolute, k:
// relative to scale k); 0 and other non-positive values (a "whole row" code) keep a fixed
// point far from every real value, so skills agreeing on it agree under every transfer.
double transferred_log2(int64_t v, const SpaceParam& source, const SpaceParam& target, int k) {
  if (v <= 0) return 1e6;
  if (k < 0) return std::log2(double(v));
  return std::log2(double(v)) + std::log2(double(target.scales[size_t(k)])) - std::log2(double(source.scales[size_t(k)]));
}

bool scales_match(const SpaceParam& source, const SpaceParam& target) {
  if (source.scales.size() != target.scales.size() || target.scales.empty()) return false;
  for (size_t k = 0; k < target.scales.size(); ++k)
    if (source.scales[k] <= 0 || target.scales[k] <= 0) return false;
  return true;
}

// A choice's value as it lands in the target relative to the model: the source's start value
// becomes the target's start value and the target's start value the source's (a transposition,
// so distinct values stay distinct); others keep their value. Without both starts: itself.
int64_t model_relative_choice(int64_t v, const Evidence& e, const std::string& name) {
  auto f = e.source_start.find(name), t = e.target_start.find(name);
  if (f == e.source_start.end() || t == e.target_start.end()) return v;
  if (v == f->second) return t->second;
  if (v == t->second) return f->second;
  return v;
}

}  // namespace

std::vector<int> SkillPrior::map_index(const Evidence& e, const Config& c_in) const {
  const TuneTarget& source = e.source;
  Config c = c_in;
  for (size_t p = 0; p < target_.space.size(); ++p)
    if (choice_follows_model(p)) {
      auto it = c.find(target_.space[p].name);
      if (it != c.end()) it->second = model_relative_choice(it->second, e, it->first);
    }
  std::vector<int> idx = target_.index_of(c);
  std::vector<bool> builtin_here(target_.space.size(), false);
  for (size_t p = 0; p < target_.space.size(); ++p) {
    // 0 is "the kernel's own choice" (kv_compress.bwd's split by entries), not a number: where the
    // target's space lacks it, a skill's 0 is the target's built-in value, not the nearest value
    // (channel_block 8, the slowest measured).
    const SpaceParam& tp = target_.space[p];
    auto it = c.find(tp.name);
    const int64_t builtin = builtin_value(target_, tp.name);
    if (it == c.end() || it->second != 0 || builtin <= 0 ||
        std::find(tp.values.begin(), tp.values.end(), int64_t(0)) != tp.values.end())
      continue;
    idx[p] = target_.index_of({{tp.name, builtin}})[p];
    builtin_here[p] = true;
  }
  for (size_t p = 0; p < target_.space.size(); ++p) {
    const SpaceParam& tp = target_.space[p];
    auto it = c.find(tp.name);
    if (it == c.end() || choice_follows_model(p) || builtin_here[p]) continue;
    const SpaceParam* sp = find_param(source, tp.name);
    const int k = transfer(p);
    if (k >= 0 && sp && it->second > 0 && scales_match(*sp, tp)) {
      // Relative: the candidate nearest in log2 to the value scaled to this shape.
      const double want = transferred_log2(it->second, *sp, tp, k);
      double best_d = std::numeric_limits<double>::infinity();
      for (size_t v = 0; v < tp.values.size(); ++v) {
        if (tp.values[v] <= 0) continue;
        const double d = std::fabs(std::log2(double(tp.values[v])) - want);
        if (d < best_d - 1e-12) {
          best_d = d;
          idx[p] = int(v);
        }
      }
      continue;
    }
    if (tp.whole <= 0 || !sp || sp->whole <= 0 || it->second < sp->whole) continue;
    // Covered the whole dimension there: the target's smallest value that covers it here.
    int pick = int(tp.values.size()) - 1;
    for (size_t v = 0; v < tp.values.size(); ++v)
      if (tp.values[v] >= tp.whole) {
        pick = int(v);
        break;
      }
    idx[p] = pick;
  }
  return idx;
}

SkillPrior::SkillPrior(const TuneTarget& target, const std::vector<Evidence>& evidence, const PriorOptions& options)
    : target_(target), options_(options), evidence_(evidence) {
  choose_transfers(evidence);
  choose_choice_transfers(evidence);
  for (const Evidence& e : evidence) {
    SkillObs s;
    for (const Observation& o : e.observations) {
      if (!(o.relative >= 1) || !std::isfinite(o.relative)) continue;  // a relative time is >= 1
      s.index.push_back(map_index(e, o.config));
      s.relative.push_back(o.relative);
    }
    if (!s.index.empty()) skills_.push_back(std::move(s));
  }
  // Move effects: pairs of one skill's observations that differ in one parameter only.
  effects_.resize(target_.space.size());
  for (size_t p = 0; p < target_.space.size(); ++p) {
    std::map<std::pair<int, int>, std::vector<double>> log_per_skill;  // (v, w) -> log ratio per skill
    for (const SkillObs& s : skills_) {
      // Group by the other parameters' indices.
      std::map<std::vector<int>, std::vector<size_t>> groups;
      for (size_t i = 0; i < s.index.size(); ++i) {
        std::vector<int> rest = s.index[i];
        rest[p] = -1;
        groups[rest].push_back(i);
      }
      std::map<std::pair<int, int>, std::vector<double>> ratios;
      for (const auto& [rest, members] : groups)
        for (size_t a : members)
          for (size_t b : members)
            if (s.index[a][p] != s.index[b][p]) ratios[{s.index[a][p], s.index[b][p]}].push_back(s.relative[b] / s.relative[a]);
      for (auto& [vw, r] : ratios) {
        std::sort(r.begin(), r.end());
        double med = r.size() % 2 ? r[r.size() / 2] : std::sqrt(r[r.size() / 2 - 1] * r[r.size() / 2]);
        log_per_skill[vw].push_back(std::log(med));
      }
    }
    for (const auto& [vw, logs] : log_per_skill) {
      double sum = 0, low = logs[0], high = logs[0];
      for (double l : logs) {
        sum += l;
        low = std::min(low, l);
        high = std::max(high, l);
      }
      effects_[p][vw] = {std::exp(sum / double(logs.size())), int(logs.size()), std::exp(low), std::exp(high)};
    }
  }
  // Rules: per parameter value, the best relative time each skill saw with it.
  ruled_out_.resize(target_.space.size());
  for (size_t p = 0; p < target_.space.size(); ++p) {
    ruled_out_[p].assign(target_.space[p].values.size(), false);
    for (size_t v = 0; v < target_.space[p].values.size(); ++v) {
      int support = 0;
      bool all_slow = true;
      double lowest = std::numeric_limits<double>::infinity();
      for (const SkillObs& s : skills_) {
        double best = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < s.index.size(); ++i)
          if (s.index[i][p] == int(v)) best = std::min(best, s.relative[i]);
        if (!std::isfinite(best)) continue;
        ++support;
        lowest = std::min(lowest, best);
        if (best <= options.prune_above) all_slow = false;
      }
      if (support >= options.min_support && all_slow) {
        ruled_out_[p][v] = true;
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s=%lld (%d skills, best %.3f)", target_.space[p].name.c_str(),
                      static_cast<long long>(target_.space[p].values[v]), support, lowest);
        rules_.push_back(buf);
      }
    }
    // Never rule out every value of a parameter: the space would be empty.
    if (std::all_of(ruled_out_[p].begin(), ruled_out_[p].end(), [](bool b) { return b; })) {
      ruled_out_[p].assign(ruled_out_[p].size(), false);
      std::erase_if(rules_, [&](const std::string& r) { return r.rfind(target_.space[p].name + "=", 0) == 0; });
    }
  }
  // Consensus: each skill's best index of the parameter (its fastest observation holding it;
  // ties to the lower index); kept where enough skills lie within one candidate of each other.
  consensus_.assign(target_.space.size(), -1);
  for (size_t p = 0; p < target_.space.size(); ++p) {
    std::vector<int> bests;
    for (const SkillObs& s : skills_) {
      std::map<int, double> best_of;
      for (size_t i = 0; i < s.index.size(); ++i) {
        auto [at, fresh] = best_of.insert({s.index[i][p], s.relative[i]});
        if (!fresh) at->second = std::min(at->second, s.relative[i]);
      }
      auto best = std::min_element(best_of.begin(), best_of.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      bests.push_back(best->first);
    }
    if (int(bests.size()) < options.min_support) continue;
    std::sort(bests.begin(), bests.end());
    // A choice (no scale: micro-kernel, store kind) needs every skill on the same value; a
    // blocking may differ by one candidate (neighbouring values of a smooth curve).
    const int spread = target_.space[p].scales.empty() ? 0 : 1;
    if (bests.back() - bests.front() > spread) continue;
    const int median = bests[(bests.size() - 1) / 2];
    if (!ruled_out(p, median)) consensus_[p] = median;
  }
}

void SkillPrior::choose_transfers(const std::vector<Evidence>& evidence) {
  transfer_.assign(target_.space.size(), -1);
  for (size_t p = 0; p < target_.space.size(); ++p) {
    const SpaceParam& tp = target_.space[p];
    if (tp.scales.empty()) continue;
    // Each skill's best value of the parameter (the value of its fastest observation holding
    // it; ties to the smaller value), in its own units.
    std::vector<std::pair<int64_t, const SpaceParam*>> bests;
    for (const Evidence& e : evidence) {
      const SpaceParam* sp = find_param(e.source, tp.name);
      if (!sp || !scales_match(*sp, tp)) continue;
      std::map<int64_t, double> best_of;
      for (const Observation& o : e.observations) {
        auto it = o.config.find(tp.name);
        if (it == o.config.end() || !(o.relative >= 1) || !std::isfinite(o.relative)) continue;
        auto [at, fresh] = best_of.insert({it->second, o.relative});
        if (!fresh) at->second = std::min(at->second, o.relative);
      }
      if (best_of.empty()) continue;
      auto best = std::min_element(best_of.begin(), best_of.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      bests.push_back({best->first, sp});
    }
    // Scales first, then the absolute value: a tie (or one skill) keeps the first scale.
    int chosen = 0;
    double lowest = std::numeric_limits<double>::infinity();
    for (int k = 0; k <= int(tp.scales.size()); ++k) {
      const int mode = k < int(tp.scales.size()) ? k : -1;
      double spread = 0;
      for (size_t i = 0; i < bests.size(); ++i)
        for (size_t j = i + 1; j < bests.size(); ++j)
          spread += std::fabs(transferred_log2(bests[i].first, *bests[i].second, tp, mode) -
                              transferred_log2(bests[j].first, *bests[j].second, tp, mode));
      if (spread < lowest - 1e-9) {
        lowest = spread;
        chosen = mode;
      }
    }
    transfer_[p] = chosen;
  }
}

void SkillPrior::choose_choice_transfers(const std::vector<Evidence>& evidence) {
  follow_model_.assign(target_.space.size(), false);
  for (size_t p = 0; p < target_.space.size(); ++p) {
    const SpaceParam& tp = target_.space[p];
    if (!tp.scales.empty()) continue;
    // Each skill's best value (its fastest observation's), as itself and relative to the model.
    std::vector<int64_t> same, relative;
    for (const Evidence& e : evidence) {
      if (!e.source_start.count(tp.name) || !e.target_start.count(tp.name)) {
        same.clear();
        break;  // a skill without the model's starts: the choice maps to itself
      }
      const Observation* best = nullptr;
      for (const Observation& o : e.observations)
        if (o.config.count(tp.name) && o.relative >= 1 && std::isfinite(o.relative) && (!best || o.relative < best->relative))
          best = &o;
      if (!best) continue;
      same.push_back(best->config.at(tp.name));
      relative.push_back(model_relative_choice(same.back(), e, tp.name));
    }
    if (same.empty()) continue;
    auto disagree = [](const std::vector<int64_t>& v) {
      int n = 0;
      for (size_t i = 0; i < v.size(); ++i)
        for (size_t j = i + 1; j < v.size(); ++j) n += v[i] != v[j];
      return n;
    };
    follow_model_[p] = disagree(relative) <= disagree(same);
  }
}

std::vector<std::string> SkillPrior::transfers() const {
  std::vector<std::string> out;
  for (size_t p = 0; p < target_.space.size(); ++p) {
    const SpaceParam& tp = target_.space[p];
    if (tp.scales.empty()) continue;
    const int k = transfer(p);
    out.push_back(tp.name + ": " + (k < 0 ? std::string("absolute") : "ratio to " + std::to_string(tp.scales[size_t(k)])));
  }
  return out;
}

double SkillPrior::predicted(const std::vector<int>& index) const {
  if (skills_.empty()) return std::numeric_limits<double>::quiet_NaN();
  double log_sum = 0;
  for (const SkillObs& s : skills_) {
    // The nearest observation; among equally near ones, the fastest.
    int best_d = std::numeric_limits<int>::max();
    double rel = 0;
    for (size_t i = 0; i < s.index.size(); ++i) {
      int d = index_steps(s.index[i], index);
      if (d < best_d || (d == best_d && s.relative[i] < rel)) {
        best_d = d;
        rel = s.relative[i];
      }
    }
    log_sum += std::log(rel * (1 + kPerStep * best_d));
  }
  return std::exp(log_sum / double(skills_.size()));
}

bool SkillPrior::ruled_out(size_t p, int v) const {
  return p < ruled_out_.size() && v >= 0 && size_t(v) < ruled_out_[p].size() && ruled_out_[p][size_t(v)];
}

bool SkillPrior::pruned(const std::vector<int>& index) const {
  for (size_t p = 0; p < index.size() && p < ruled_out_.size(); ++p)
    if (index[p] >= 0 && size_t(index[p]) < ruled_out_[p].size() && ruled_out_[p][size_t(index[p])]) return true;
  return false;
}

std::vector<std::string> SkillPrior::rules() const { return rules_; }

const SkillPrior::Effect* SkillPrior::effect(size_t p, int v, int w) const {
  if (p >= effects_.size()) return nullptr;
  auto it = effects_[p].find({v, w});
  return it == effects_[p].end() ? nullptr : &it->second;
}

double SkillPrior::move_ratio(size_t p, int v, int w) const {
  const Effect* e = effect(p, v, w);
  return e ? e->ratio : std::numeric_limits<double>::quiet_NaN();
}

double SkillPrior::settled_ratio(size_t p, int v, int w) const {
  const Effect* e = effect(p, v, w);
  if (!e || e->support < options_.min_support) return 1;
  if (e->highest < 1 - options_.settled || e->lowest > 1 + options_.settled) return e->ratio;
  return 1;
}

int SkillPrior::move_support(size_t p, int v, int w) const {
  const Effect* e = effect(p, v, w);
  return e ? e->support : 0;
}

bool SkillPrior::move_pruned(size_t p, int v, int w) const {
  const Effect* e = effect(p, v, w);
  if (!e || e->support < options_.min_support) return false;
  // Every skill's ratio beyond the limit: the geometric mean alone could hide one that gained.
  return e->lowest > options_.prune_above;
}

std::vector<int> SkillPrior::descend(std::vector<int> from) const {
  for (size_t p = 0; p < from.size() && p < ruled_out_.size(); ++p) {
    if (!ruled_out(p, from[p])) continue;
    const int n = int(ruled_out_[p].size());
    for (int d = 1; d < n; ++d) {  // the nearest allowed value, the lower one first
      if (from[p] - d >= 0 && !ruled_out(p, from[p] - d)) {
        from[p] -= d;
        break;
      }
      if (from[p] + d < n && !ruled_out(p, from[p] + d)) {
        from[p] += d;
        break;
      }
    }
  }
  std::vector<bool> moved(target_.space.size(), false);
  for (size_t p = 0; p < from.size() && p < consensus_.size(); ++p) {
    if (consensus_[p] < 0) continue;
    if (consensus_[p] == from[p]) {
      // The skills agree on the start's value: it stays, and the greedy step below does not move
      // it (as before session 9's gain test). A consensus held back by that test (or pruned)
      // leaves its parameter to the greedy step, which moves only on a settled gain.
      moved[p] = true;
      continue;
    }
    std::vector<int> nb = from;
    nb[p] = consensus_[p];
    if (pruned(nb)) continue;
    // Only a settled gain moves the start: the skills that measured both values must all have
    // found the consensus faster by more than `settled` (each its best holding either value).
    // Why: on a flat parameter each skill's best is a noise draw, and a few draws can land
    // within one candidate of each other by chance; moving the model's start there cost
    // evaluations wherever the start was already within noise of the best (session 9).
    if (!consensus_gain_settled(p, from[p], consensus_[p])) continue;
    from = nb;
    moved[p] = true;
  }
  while (true) {
    double best = 1;
    size_t bp = 0;
    int bw = -1;
    for (size_t p = 0; p < target_.space.size(); ++p) {
      if (moved[p]) continue;
      for (int w = 0; w < int(target_.space[p].values.size()); ++w) {
        if (w == from[p]) continue;
        const double r = settled_ratio(p, from[p], w);
        if (r >= best) continue;
        std::vector<int> nb = from;
        nb[p] = w;
        if (pruned(nb)) continue;
        best = r;
        bp = p;
        bw = w;
      }
    }
    if (bw < 0) return from;
    from[bp] = bw;
    moved[bp] = true;
  }
}

bool SkillPrior::consensus_gain_settled(size_t p, int v, int w) const {
  for (const SkillObs& s : skills_) {
    double at_v = std::numeric_limits<double>::infinity(), at_w = at_v;
    for (size_t i = 0; i < s.index.size(); ++i) {
      if (s.index[i][p] == v) at_v = std::min(at_v, s.relative[i]);
      if (s.index[i][p] == w) at_w = std::min(at_w, s.relative[i]);
    }
    if (!std::isfinite(at_v) || !std::isfinite(at_w)) continue;
    if (!(at_w < at_v * (1 - options_.settled))) return false;
  }
  // No skill measured the start's value (it lies outside their spaces once mapped): nothing
  // contradicts the consensus, which is what they measured best.
  return true;
}

std::vector<std::vector<int>> SkillPrior::ranked(size_t n) const {
  std::vector<std::pair<double, std::vector<int>>> all;
  if (skills_.empty() || n == 0) return {};
  std::vector<int> idx(target_.space.size(), 0);
  for (size_t i = 0; i < target_.size(); ++i) {
    if (!pruned(idx)) all.push_back({predicted(idx), idx});
    for (size_t p = target_.space.size(); p-- > 0;) {
      if (++idx[p] < int(target_.space[p].values.size())) break;
      idx[p] = 0;
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<int>> out;
  for (size_t i = 0; i < all.size() && i < n; ++i) out.push_back(all[i].second);
  return out;
}

Config model_start(const TuneTarget& t, const AuraHardware& hw) {
  // Solving the integer program is the costly part of learning a prior (GEMM's spaces), and the
  // leave-one-out bench learns hundreds: the starts are kept per target and hardware.
  static std::mutex mu;
  static std::map<std::string, Config> memo;
  // Every figure the model reads is in the key: two descriptions of one CPU (a probe and a
  // description file) share name and features() but not bandwidths, peaks or the nt gain.
  char figures[384];
  std::snprintf(figures, sizeof figures, " %.17g %.17g %.17g %.17g %.17g %.17g %.17g %d %.17g %.17g %.17g %.17g",
                hw.peak_flops, hw.peak_avx2, hw.bw_mem, hw.bw_l1, hw.bw_l2, hw.bw_l3, hw.nt_gain, hw.nt_threads,
                hw.gemm_call_line_s, hw.gemm_pool_job_s, hw.job_s, hw.nt_write_scale);
  const std::string key =
      t.kernel + " " + t.shape_text() + " " + t.dtype + " " + hw.name + " " + hw.features() + figures;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  // No feasible configuration (every choice forbidden on this hardware): no start, and an empty
  // start means "the choice maps to itself" (model_relative_choice()); `index` is empty then.
  const ChoiceSolution sol = solve_choices(performance_model(t, hw));
  Config c = sol.feasible ? t.config_at(sol.index) : Config{};
  std::lock_guard<std::mutex> lock(mu);
  memo[key] = c;
  return c;
}

std::vector<Evidence> prior_evidence(const std::vector<Skill>& skills, const TuneTarget& t, const AuraHardware& hw) {
  std::vector<Evidence> out;
  const std::string regime = roofline_regime(t, hw), features = hw.features();
  for (const Skill& k : skills) {
    if (k.kernel != t.kernel || k.hardware != features || k.observations.empty()) continue;
    try {
      TuneTarget other = make_target(k.kernel, parse_shape(k.kernel, k.shape), hw, t.dtype);
      if (roofline_regime(other, hw) != regime) continue;
      out.push_back({other, k.observations, model_start(other, hw), model_start(t, hw)});
    } catch (const InputError&) {
      continue;  // a shape class this build cannot make a target of: no evidence
    }
  }
  return out;
}

SearchSeed warm_start(const SkillPrior& prior, const TuneTarget& t, const SearchSeed& model_start,
                      SearchOptions& options) {
  if (prior.empty()) return model_start;
  options.prior = &prior;
  const std::vector<int> from = t.index_of(model_start.config), to = prior.descend(from);
  if (to == from) return model_start;
  // A prediction that one skill's noise moves is not measured (session 12: at two threads the
  // skills' seed was a different configuration per noise draw and cost one of three evaluations).
  if (!prior.stable(from, to)) return model_start;
  // The model's start is measured first, the skills' prediction next (session 11): where the
  // skills learned from noisy searches (two threads on the shared machine) their prediction
  // moved a start that was already right, and a search with one evaluation lost it; measuring
  // the start first costs one evaluation where the skills are right and the start is not.
  options.seeds.insert(options.seeds.begin(), SearchSeed{t.config_at(to), "skills"});
  return model_start;
}

bool SkillPrior::stable(const std::vector<int>& from, const std::vector<int>& to) const {
  if (evidence_.size() < 3) return true;
  for (size_t i = 0; i < evidence_.size(); ++i) {
    std::vector<Evidence> rest;
    for (size_t j = 0; j < evidence_.size(); ++j)
      if (j != i) rest.push_back(evidence_[j]);
    if (SkillPrior(target_, rest, options_).descend(from) != to) return false;
  }
  return true;
}

std::string roofline_regime(const TuneTarget& t, const AuraHardware& hw) {
  Diagnosis d = diagnose(t, hw, 0);
  return d.t_compute >= std::max(d.t_load, d.t_store) ? "compute" : "memory";
}

}  // namespace trex::aura
