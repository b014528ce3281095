// Calibrating the performance model's figures to other shapes' measurements (see calibrate.h).
#include "trex/aura/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "trex/util/error.h"

namespace trex::aura {

namespace {

// The figures a calibration may scale: every rate and event time the models read, and the
// non-temporal write factor. Each has its own grid: `per_octave` steps (0: the options'), at
// most `max_factor` either way (0: the options'). The write factor decides a store kind by a few
// percent (1.02 against 1.00), so its grid is finer and narrower.
struct Figure {
  const char* name;
  double AuraHardware::*field;
  int per_octave;
  double max_factor;
};
constexpr Figure kFigures[] = {
    {"peak_flops", &AuraHardware::peak_flops, 0, 0},
    {"peak_avx2", &AuraHardware::peak_avx2, 0, 0},
    {"bw_l1", &AuraHardware::bw_l1, 0, 0},
    {"bw_l2", &AuraHardware::bw_l2, 0, 0},
    {"bw_l3", &AuraHardware::bw_l3, 0, 0},
    {"bw_mem", &AuraHardware::bw_mem, 0, 0},
    {"gemm_call_line_s", &AuraHardware::gemm_call_line_s, 0, 0},
    {"gemm_pool_job_s", &AuraHardware::gemm_pool_job_s, 0, 0},
    {"job_s", &AuraHardware::job_s, 0, 0},
    {"nt_write_scale", &AuraHardware::nt_write_scale, 32, 2},
};
constexpr size_t kFigureCount = sizeof kFigures / sizeof kFigures[0];

struct Prepared {
  const TuneTarget* target;
  std::vector<std::vector<int>> index;
  std::vector<double> log_relative, weight;
};

int steps_per_octave(size_t f, const CalibrationOptions& o) {
  return std::max(1, kFigures[f].per_octave > 0 ? kFigures[f].per_octave : o.steps_per_octave);
}

double factor_of(size_t f, int steps, const CalibrationOptions& o) {
  return std::exp2(double(steps) / steps_per_octave(f, o));
}

AuraHardware scaled(const AuraHardware& hw, const std::vector<int>& steps, const CalibrationOptions& o) {
  AuraHardware h = hw;
  for (size_t f = 0; f < kFigureCount; ++f)
    if (steps[f]) h.*kFigures[f].field = hw.*kFigures[f].field * factor_of(f, steps[f], o);
  return h;
}

// Weighted mean square of the per-shape centred residuals (no ridge); with `pick` > 0 plus pick x
// the mean over shapes of ln(measured relative time of the observation the model ranks first).
double model_error(const std::vector<Prepared>& shapes, const AuraHardware& h, double pick = 0) {
  double sum = 0, weight = 0, picked = 0;
  for (const Prepared& s : shapes) {
    const ChoiceProblem pr = performance_model(*s.target, h);
    std::vector<double> r(s.index.size(), NAN);
    double mean = 0, w = 0, lowest = INFINITY;
    size_t first = 0;
    for (size_t i = 0; i < s.index.size(); ++i) {
      const double cost = choice_cost(pr, s.index[i]);
      if (!(cost > 0) || !std::isfinite(cost)) continue;
      if (cost < lowest) {
        lowest = cost;
        first = i;
      }
      r[i] = s.log_relative[i] - std::log(cost);
      mean += s.weight[i] * r[i];
      w += s.weight[i];
    }
    if (std::isfinite(lowest)) picked += s.log_relative[first] / double(shapes.size());
    if (w <= 0) continue;
    mean /= w;
    for (size_t i = 0; i < r.size(); ++i)
      if (std::isfinite(r[i])) {
        sum += s.weight[i] * (r[i] - mean) * (r[i] - mean);
        weight += s.weight[i];
      }
  }
  return (weight > 0 ? sum / weight : 0) + pick * picked;
}

}  // namespace

std::string Calibration::text() const {
  std::string out;
  for (const auto& [name, factor] : factors) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s x%.3g", out.empty() ? "" : ", ", name.c_str(), factor);
    out += buf;
  }
  char tail[160];
  std::snprintf(tail, sizeof tail, " (rms %.3f -> %.3f, %zu shapes, %zu observations)", error_before, error_after,
                shapes, observations);
  return (out.empty() ? std::string("as probed") : out) + tail;
}

std::vector<ShapeEvidence> calibration_evidence(const std::vector<Skill>& skills, const TuneTarget& t,
                                                const AuraHardware& hw) {
  std::vector<ShapeEvidence> out;
  const std::string features = hw.features();
  for (const Skill& k : skills) {
    if (k.kernel != t.kernel || k.hardware != features || k.observations.empty()) continue;
    try {
      TuneTarget other = make_target(k.kernel, parse_shape(k.kernel, k.shape), hw, t.dtype);
      if (other.shape_class == t.shape_class) continue;  // t's own class: not another shape's evidence
      out.push_back({std::move(other), k.observations});
    } catch (const InputError&) {
      continue;  // a shape class this build cannot make a target of: no evidence
    }
  }
  return out;
}

Calibration calibrate_model(const std::vector<ShapeEvidence>& evidence, const AuraHardware& hw,
                            const CalibrationOptions& options) {
  Calibration cal;
  cal.hw = hw;
  std::vector<Prepared> shapes;
  for (const ShapeEvidence& e : evidence) {
    Prepared p{&e.target, {}, {}, {}};
    for (const Observation& o : e.observations) {
      if (!(o.relative > 0) || !std::isfinite(o.relative)) continue;
      const double rel = std::min(o.relative, options.cap_relative);
      p.index.push_back(e.target.index_of(o.config));
      p.log_relative.push_back(std::log(rel));
      p.weight.push_back(1 / rel);
    }
    if (p.index.size() < 2) continue;  // one observation says nothing about a ranking
    cal.observations += p.index.size();
    shapes.push_back(std::move(p));
  }
  cal.shapes = shapes.size();
  if (shapes.empty()) return cal;
  std::vector<int> steps(kFigureCount, 0);
  auto penalty = [&](const std::vector<int>& s) {
    double p = 0;
    for (size_t f = 0; f < kFigureCount; ++f) {
      const double octaves = double(s[f]) / steps_per_octave(f, options);
      p += options.ridge * octaves * octaves;
    }
    return p;
  };
  cal.error_before = std::sqrt(model_error(shapes, hw));
  double current = model_error(shapes, hw, options.pick) + penalty(steps);
  // A figure whose multiplier changes no cost of any observation (a GEMM bandwidth the shapes
  // never reach, a row kernel's call time) is left as probed and not tried again.
  std::vector<bool> inert(kFigureCount, false);
  for (int sweep = 0; sweep < options.max_sweeps; ++sweep) {
    bool moved = false;
    for (size_t f = 0; f < kFigureCount; ++f) {
      if (inert[f] || !(hw.*kFigures[f].field > 0)) continue;
      const double max_factor = kFigures[f].max_factor > 0 ? kFigures[f].max_factor : options.max_factor;
      const int limit = int(std::lround(std::log2(std::max(1.0, max_factor)) * steps_per_octave(f, options)));
      int best_step = steps[f];
      double best = current;
      bool any_effect = false;
      const double base_error = current - penalty(steps);
      for (int g = -limit; g <= limit; ++g) {
        if (g == steps[f]) continue;
        std::vector<int> trial = steps;
        trial[f] = g;
        const double err = model_error(shapes, scaled(hw, trial, options), options.pick);
        any_effect = any_effect || std::fabs(err - base_error) > 1e-12 * std::max(1e-12, base_error);
        const double total = err + penalty(trial);
        if (total < best - 1e-15) {
          best = total;
          best_step = g;
        }
      }
      if (!any_effect && sweep == 0) inert[f] = true;
      if (best_step != steps[f]) {
        steps[f] = best_step;
        current = best;
        moved = true;
      }
    }
    if (!moved) break;
  }
  cal.hw = scaled(hw, steps, options);
  cal.error_after = std::sqrt(model_error(shapes, cal.hw));
  for (size_t f = 0; f < kFigureCount; ++f)
    if (steps[f]) cal.factors.push_back({kFigures[f].name, factor_of(f, steps[f], options)});
  return cal;
}

CalibrationOptions tune_calibration_options() {
  CalibrationOptions o;
  o.pick = 1;
  return o;
}

CalibratedSeed calibrated_seed(const std::vector<Skill>& skills, const TuneTarget& t, const AuraHardware& hw,
                               const SearchSeed& model_start, SearchOptions& options,
                               const CalibrationOptions& calibration) {
  CalibratedSeed out;
  out.calibration = calibrate_model(calibration_evidence(skills, t, hw), hw, calibration);
  if (out.calibration.shapes == 0) return out;
  const ChoiceSolution sol = solve_choices(performance_model(t, out.calibration.hw));
  if (!sol.feasible) return out;  // nothing to seed: the search runs as without the calibration
  out.config = t.config_at(sol.index);
  if (out.config == model_start.config) return out;
  out.seeded = true;
  options.seeds.insert(options.seeds.begin(), SearchSeed{out.config, "calibrated"});
  return out;
}

std::vector<Config> model_ranked(const TuneTarget& t, const ChoiceProblem& model, size_t n) {
  std::vector<std::pair<double, size_t>> costs;
  std::vector<int> index(t.space.size(), 0);
  const size_t total = t.size();
  for (size_t i = 0; i < total; ++i) {
    const double c = choice_cost(model, index);
    if (std::isfinite(c)) costs.push_back({c, i});
    for (size_t p = 0; p < index.size(); ++p) {  // the next index, the first parameter fastest
      if (++index[p] < int(t.space[p].values.size())) break;
      index[p] = 0;
    }
  }
  std::stable_sort(costs.begin(), costs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> out;
  for (size_t i = 0; i < costs.size() && out.size() < n; ++i) {
    size_t rest = costs[i].second;
    std::vector<int> idx(t.space.size());
    for (size_t p = 0; p < idx.size(); ++p) {
      idx[p] = int(rest % t.space[p].values.size());
      rest /= t.space[p].values.size();
    }
    out.push_back(t.config_at(idx));
  }
  return out;
}

}  // namespace trex::aura
