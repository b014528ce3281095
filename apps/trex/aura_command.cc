// trex aura tune|model|exhaustive|skills: AuraKernel for trex's tunable kernels (docs/aura.md).
//
// tune: profile the built-in configuration and diagnose its regime, solve the kernel's
//   performance model as an integer program (CBC) for a start and ranked directions, seed the
//   K-Search tree with the nearest skills (and, where skills of other shapes calibrate the model,
//   the calibrated program's optimum, measured second: calibrate.h), search within the budget (every candidate through the
//   kernel gate before timing), then write the best configuration into the tuning file and the
//   verified gain into the skill database.
// model: the integer program alone (no measurement): start, predicted time, directions.
// exhaustive: measure every configuration of the space (ground truth for the search).
// skills: list the skill database.
// Files are read and checked before anything is measured; outputs are written whole (tuning
// file atomically, the skill row in one transaction) and only after a successful run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/aura/calibrate.h"
#include "trex/aura/choice_ip.h"
#include "trex/aura/diagnose.h"
#include "trex/aura/hardware.h"
#include "trex/aura/live.h"
#include "trex/aura/search.h"
#include "trex/aura/prior.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/tuning.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

using aura::Config;

struct AuraArgs {
  std::string kernel;
  std::string shape;
  std::string dtype = "fp32";
  int budget = 30;
  std::string hw;
  std::string out;
  std::string skills = "aura-skills.db";
  bool no_skills = false;
  int threads = 0;
  double min_gain = 0.01;
  int verify = 3;  // re-measurements of the built-in and the best, each, before a gain is written
  double min_time = 0.1;
  std::string timing = "auto";  // live.h: the fastest of a candidate's calls on one thread, else their median
  size_t limit = 0;
  bool json = false;
};

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s * 1e3);
  return b;
}

std::string config_line(const Config& c) {
  std::string s;
  for (const auto& [n, v] : c) s += (s.empty() ? "" : " ") + n + "=" + std::to_string(v);
  return s;
}

struct Setup {
  aura::AuraHardware hw;
  std::unique_ptr<core::ThreadPool> pool;
  aura::TuneTarget target;
};

// The kernel, shape and thread count: they need no measurement and are the likeliest mistakes.
void check_target(const AuraArgs& a) {
  if (a.threads < 0) throw InputError::field("--threads", "must be >= 0");
  if (kernels::params_of(a.kernel).empty()) aura::make_target(a.kernel, {1, 1}, aura::AuraHardware{});
  aura::parse_shape(a.kernel, a.shape);
}

Setup setup(const AuraArgs& a) {
  check_target(a);
  Setup s;
  std::vector<int64_t> dims = aura::parse_shape(a.kernel, a.shape);
  s.pool = std::make_unique<core::ThreadPool>(a.threads);
  s.hw = aura::load_hardware(a.hw, s.pool->num_threads());
  s.target = aura::make_target(a.kernel, dims, s.hw, a.dtype);
  return s;
}

// Ranked directions from the model's optimum: each single-parameter move and its predicted time.
struct Direction {
  std::string change;
  double predicted;
};
std::vector<Direction> directions(const aura::TuneTarget& t, const aura::ChoiceProblem& pr,
                                  const std::vector<int>& at) {
  std::vector<Direction> out;
  for (size_t p = 0; p < t.space.size(); ++p)
    for (size_t v = 0; v < t.space[p].values.size(); ++v) {
      if (int(v) == at[p]) continue;
      std::vector<int> nb = at;
      nb[p] = int(v);
      double c = aura::choice_cost(pr, nb);
      if (!std::isfinite(c)) continue;
      out.push_back({t.space[p].name + " " + std::to_string(t.space[p].values[size_t(at[p])]) + "->" +
                         std::to_string(t.space[p].values[v]),
                     c});
    }
  std::sort(out.begin(), out.end(), [](const Direction& a, const Direction& b) { return a.predicted < b.predicted; });
  return out;
}

// ---------------------------------------------------------------------------- model

int run_model(const AuraArgs& a) {
  Setup s = setup(a);
  aura::ChoiceProblem pr = aura::performance_model(s.target, s.hw);
  aura::ChoiceSolution sol = aura::solve_choices(pr);
  if (!sol.feasible) throw InputError(a.kernel + ": the performance model has no feasible configuration (" + sol.status + ")");
  Config start = s.target.config_at(sol.index);
  Config builtin = aura::builtin_config(s.target, s.hw);
  double t_builtin = aura::choice_cost(pr, s.target.index_of(builtin));
  std::vector<Direction> dirs = directions(s.target, pr, sol.index);
  if (a.json) {
    nlohmann::ordered_json j;
    j["kernel"] = a.kernel;
    j["shape"] = s.target.shape_text();
    j["space"] = s.target.size();
    j["program"] = {{"variables", sol.variables}, {"rows", sol.rows}, {"solver", sol.solver}, {"status", sol.status}};
    j["start"] = start;
    j["predicted_s"] = sol.objective;
    j["builtin"] = builtin;
    j["builtin_predicted_s"] = t_builtin;
    nlohmann::ordered_json d = nlohmann::ordered_json::array();
    for (const Direction& x : dirs) d.push_back({{"change", x.change}, {"predicted_s", x.predicted}});
    j["directions"] = d;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s %s: %zu configurations; hardware %s (%s)\n", a.kernel.c_str(), s.target.shape_text().c_str(),
              s.target.size(), s.hw.features().c_str(), s.hw.source.c_str());
  if (!s.target.fixed.empty()) std::printf("space     fixed: %s\n", s.target.fixed.c_str());
  std::printf("integer program: %d variables, %d rows, %s %s\n", sol.variables, sol.rows, sol.solver.c_str(),
              sol.status.c_str());
  std::printf("start     %s  predicted %s ms\n", config_line(start).c_str(), ms(sol.objective).c_str());
  std::printf("built-in  %s  predicted %s ms\n", config_line(builtin).c_str(), ms(t_builtin).c_str());
  std::printf("directions (predicted time of one move from the start):\n");
  for (size_t i = 0; i < dirs.size() && i < 8; ++i)
    std::printf("  %-22s %s ms\n", dirs[i].change.c_str(), ms(dirs[i].predicted).c_str());
  return 0;
}

// ---------------------------------------------------------------------------- tune

int run_tune(const AuraArgs& a) {
  if (a.budget < 1) throw InputError::field("--budget", "must be >= 1 (measured candidates)");
  if (!(a.min_gain >= 0 && a.min_gain < 0.5)) throw InputError::field("--min-gain", "must be in [0, 0.5)");
  if (a.verify < 0) throw InputError::field("--verify", "must be >= 0 (re-measurements; 0: none)");
  const aura::Timing timing = aura::parse_timing(a.timing, "--timing");
  // The kernel and shape, then everything that will be written, before measuring anything: a
  // bad name or a corrupt file stops here, and no file is created or changed.
  check_target(a);
  kernels::Tuning tuning;
  if (!a.out.empty() && std::filesystem::exists(a.out)) tuning = kernels::Tuning::load(a.out);
  std::unique_ptr<aura::SkillStore> store;
  if (!a.no_skills && std::filesystem::exists(a.skills)) store = std::make_unique<aura::SkillStore>(a.skills);
  Setup s = setup(a);
  const aura::TuneTarget& t = s.target;
  const std::string features = s.hw.features();

  // 1. Profile the built-in configuration and diagnose.
  aura::LiveEvaluator eval(t, s.pool.get(), a.min_time, timing);
  Config builtin = aura::builtin_config(t, s.hw);
  aura::Measurement base = eval(builtin);
  if (!base.passed) throw InputError(a.kernel + ": the built-in configuration fails the gate: " + base.message);
  aura::Diagnosis diag = aura::diagnose(t, s.hw, base.seconds);

  // 2. The integer program.
  aura::ChoiceProblem pr = aura::performance_model(t, s.hw);
  aura::ChoiceSolution sol = aura::solve_choices(pr);
  if (!sol.feasible) throw InputError(a.kernel + ": the performance model has no feasible configuration (" + sol.status + ")");
  Config start = t.config_at(sol.index);
  std::vector<Direction> dirs = directions(t, pr, sol.index);

  // 3. Skills. Those with observations (same kernel, hardware and roofline regime) make the
  // prior: its best-predicted configurations start the tree, its rules prune before anything is
  // measured (prior.h). Skills without observations (a version-1 database) seed the tree with
  // their configurations and directions, as before.
  aura::SearchOptions opt;
  opt.budget = std::max(1, a.budget - 1);  // the profile above was one measured candidate
  opt.min_gain = a.min_gain;
  std::vector<aura::Skill> near;
  aura::SkillPrior prior;
  aura::SearchSeed root{start, "start"};
  if (store) {
    prior = aura::SkillPrior(t, aura::prior_evidence(store->all(a.kernel), t, s.hw));
    near = store->nearest(a.kernel, t.shape_class, features, 3);
  }
  if (!prior.empty()) {
    root = aura::warm_start(prior, t, root, opt);
  } else {
    for (const aura::Skill& k : near) {
      opt.seeds.push_back({t.config_at(t.index_of(k.config)), "skill #" + std::to_string(k.id)});
      for (const auto& [n, v] : k.config) {
        auto it = builtin.find(n);
        if (it != builtin.end() && it->second != v) opt.preferred.insert({n, v > it->second ? 1 : -1});
      }
    }
  }
  // The calibrated start (calibrate.h, session 27): the model's figures fitted to the skills of
  // other shapes; where the calibrated program's optimum is not the model's start it is measured
  // second, before the skills' seed and the built-in. No such skills: nothing changes.
  aura::CalibratedSeed calibrated;
  if (store) calibrated = aura::calibrated_seed(store->all(a.kernel), t, s.hw, root, opt);
  opt.seeds.push_back({builtin, "builtin"});  // already measured: skipped unless it is new here

  // 4. K-Search. The built-in's measurement is reused, not repeated.
  aura::Evaluator cached = [&](const Config& c) { return c == builtin ? base : eval(c); };
  aura::SearchResult r = aura::k_search(t, pr, root, cached, opt);
  const int measured = int(r.nodes.size()) + (std::any_of(r.nodes.begin(), r.nodes.end(),
                                                          [&](const aura::SearchNode& n) { return n.config == builtin; })
                                                  ? 0
                                                  : 1);
  // A calibrated seed is not measured when the budget ends first or the prior's rules rule it out.
  const bool calibrated_measured = std::any_of(r.nodes.begin(), r.nodes.end(),
                                               [](const aura::SearchNode& n) { return n.origin == "calibrated"; });
  if (r.best < 0) throw InputError(a.kernel + ": no candidate passed the gate");
  const aura::SearchNode& best = r.nodes[size_t(r.best)];
  const double gain = base.seconds / best.m.seconds;
  bool improved = best.config != builtin && gain >= 1 + a.min_gain;
  // The search's gain rests on one measurement of the built-in, the first of the process: the
  // two are measured again in turn before anything is written (search.h, verify_gain).
  aura::Verification ver;
  if (improved && a.verify > 0) {
    ver = aura::verify_gain(builtin, best.config, eval, a.verify, a.min_gain);
    improved = ver.verified;
  }

  // 5. Outputs, only now.
  int64_t skill_id = 0;
  if (!a.out.empty()) {
    if (tuning.hardware_name.empty()) tuning.hardware_name = s.hw.name;
    if (tuning.hardware_features.empty()) tuning.hardware_features = features;
    // No verified gain: every parameter at 0, "the kernel's built-in", rather than today's
    // built-in values spelled out, which would pin them if the kernels' defaults change.
    Config untuned;
    for (const aura::SpaceParam& p : t.space) untuned[p.name] = 0;
    tuning.set(a.kernel, t.shape_class, improved ? best.config : untuned);
    write_file_atomic(a.out, tuning.to_toml());
  }
  if (!a.no_skills && improved) {
    if (!store) store = std::make_unique<aura::SkillStore>(a.skills);  // created with its first skill
    aura::Skill k;
    k.kernel = a.kernel;
    k.shape = t.shape_class;
    k.hardware = features;
    k.change = aura::describe_change(builtin, best.config);
    k.config = best.config;
    k.gain = ver.measurements > 0 ? ver.gain : gain;
    k.evidence = "shape " + t.shape_text() + " " + t.dtype + ": built-in " + ms(base.seconds) + " ms, tuned " +
                 ms(best.m.seconds) + " ms (" + best.m.message + "), gate passed; " + std::to_string(measured) +
                 " candidates measured" +
                 (ver.measurements > 0 ? "; re-measured in turn " + std::to_string(a.verify) + " times each: built-in " +
                                             ms(ver.builtin_s) + " ms, tuned " + ms(ver.candidate_s) + " ms (medians)"
                                       : "");
    // Every passed candidate, relative to the fastest measured: the evidence later searches
    // learn from (a rolled-back node may be faster than the checkpoint by less than min_gain).
    // The built-in's time from the verification when there was one (search.h, tune_observations).
    k.observations = aura::tune_observations(r, builtin, base.seconds, ver);
    skill_id = store->add(k);
  }

  if (a.json) {
    nlohmann::ordered_json j;
    j["kernel"] = a.kernel;
    j["shape"] = t.shape_text();
    j["shape_class"] = t.shape_class;
    j["dtype"] = t.dtype;
    j["hardware"] = features;
    j["space"] = t.size();
    if (!t.fixed.empty()) j["space_fixed"] = t.fixed;
    j["diagnosis"] = {{"regime", diag.regime}, {"level", diag.level}, {"compute", diag.compute},
                      {"load", diag.load}, {"store", diag.store}, {"levers", diag.levers}};
    j["builtin"] = {{"config", builtin}, {"seconds", base.seconds}};
    j["model"] = {{"start", start}, {"predicted_s", sol.objective}, {"variables", sol.variables}, {"rows", sol.rows}};
    nlohmann::ordered_json d = nlohmann::ordered_json::array();
    for (size_t i = 0; i < dirs.size() && i < 8; ++i) d.push_back({{"change", dirs[i].change}, {"predicted_s", dirs[i].predicted}});
    j["model"]["directions"] = d;
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const aura::SearchNode& n : r.nodes)
      nodes.push_back({{"id", n.id}, {"parent", n.parent}, {"origin", n.origin}, {"change", n.change},
                       {"config", n.config}, {"passed", n.m.passed}, {"seconds", n.m.seconds},
                       {"state", aura::to_string(n.state)}, {"message", n.m.message}});
    j["tree"] = nodes;
    j["measured"] = measured;
    j["best"] = {{"config", best.config}, {"seconds", best.m.seconds}, {"gain", gain}, {"improved", improved}};
    if (ver.measurements > 0) {
      // A verification stopped by a failed gate has no medians: null, not a 0 that reads as a time.
      const bool timed = ver.builtin_s > 0 && ver.candidate_s > 0;
      auto or_null = [&](double x) { return timed ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr); };
      j["verification"] = {{"rounds", a.verify},         {"measurements", ver.measurements},
                           {"builtin_s", or_null(ver.builtin_s)}, {"best_s", or_null(ver.candidate_s)},
                           {"gain", or_null(ver.gain)}, {"verified", ver.verified},
                           {"message", ver.message}};
    }
    if (calibrated.calibration.shapes > 0)
      j["calibration"] = {{"fitted", calibrated.calibration.text()},
                          {"shapes", calibrated.calibration.shapes},
                          {"observations", calibrated.calibration.observations},
                          {"start", calibrated.config},
                          {"seeded", calibrated.seeded},
                          {"measured_second", calibrated_measured}};
    j["skills_used"] = prior.empty() ? near.size() : prior.skills();
    j["prior_rules"] = prior.rules();
    j["prior_transfers"] = prior.transfers();
    j["skill_recorded"] = skill_id;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s %s %s, %zu configurations; hardware %s (%s)\n", a.kernel.c_str(), t.shape_text().c_str(),
              t.dtype.c_str(), t.size(), features.c_str(), s.hw.source.c_str());
  if (!t.fixed.empty()) std::printf("space     fixed: %s; nothing to tune here\n", t.fixed.c_str());
  std::printf("built-in  %s: %s ms\n", config_line(builtin).c_str(), ms(base.seconds).c_str());
  std::printf("diagnosis %s\n", diag.text().c_str());
  std::printf("model     start %s, predicted %s ms (integer program: %d variables, %d rows, %s)\n",
              config_line(start).c_str(), ms(sol.objective).c_str(), sol.variables, sol.rows, sol.solver.c_str());
  std::printf("          directions:");
  for (size_t i = 0; i < dirs.size() && i < 4; ++i) std::printf(" %s (%s ms)%s", dirs[i].change.c_str(), ms(dirs[i].predicted).c_str(), i + 1 < std::min<size_t>(4, dirs.size()) ? "," : "");
  std::printf("\n");
  if (prior.empty()) {
    std::printf("skills    %zu nearest used as seeds\n", near.size());
  } else {
    std::string rules;
    for (const std::string& x : prior.rules()) rules += (rules.empty() ? "" : "; ") + x;
    std::string transfers;
    for (const std::string& x : prior.transfers()) transfers += (transfers.empty() ? "" : ", ") + x;
    std::printf("skills    prior from %zu skills' observations%s; ruled out before measuring: %s\n", prior.skills(),
                transfers.empty() ? "" : (" (" + transfers + ")").c_str(), rules.empty() ? "nothing" : rules.c_str());
  }
  if (calibrated.calibration.shapes > 0)
    std::printf("calibrate %s; start %s, %s\n", calibrated.calibration.text().c_str(),
                calibrated.config.empty() ? "-" : config_line(calibrated.config).c_str(),
                !calibrated.seeded   ? "the model's: nothing added"
                : calibrated_measured ? "measured second (origin calibrated)"
                                      : "seeded second, not measured (budget spent or ruled out by the skills)");
  std::printf("%4s %6s  %-10s %-28s %10s  %s\n", "node", "parent", "origin", "change", "ms", "state");
  for (const aura::SearchNode& n : r.nodes)
    std::printf("%4d %6d  %-10s %-28s %10s  %s%s\n", n.id, n.parent, n.origin.c_str(),
                n.change.empty() ? config_line(n.config).substr(0, 28).c_str() : n.change.substr(0, 28).c_str(),
                n.m.passed ? ms(n.m.seconds).c_str() : "-", aura::to_string(n.state),
                n.m.passed ? "" : (": " + n.m.message).c_str());
  std::printf("best      %s: %s ms, %.3fx the built-in (%d candidates measured, %d checkpoints)%s\n",
              config_line(best.config).c_str(), ms(best.m.seconds).c_str(), gain, measured, r.checkpoints,
              improved || ver.measurements > 0 ? "" : "; no verified gain, the built-in stays");
  if (ver.measurements > 0 && ver.builtin_s > 0 && ver.candidate_s > 0)
    std::printf("verify    built-in and best re-measured in turn, %d times each: %s ms against %s ms (medians), %.3fx%s\n",
                a.verify, ms(ver.builtin_s).c_str(), ms(ver.candidate_s).c_str(), ver.gain,
                ver.verified ? "" : ("; " + ver.message + ", the built-in stays").c_str());
  else if (ver.measurements > 0)  // stopped by a failed gate: no medians to print
    std::printf("verify    built-in and best re-measured in turn: %s, the built-in stays\n", ver.message.c_str());
  if (!a.out.empty()) std::printf("wrote     %s (%s, shape %s)\n", a.out.c_str(), a.kernel.c_str(), t.shape_class.c_str());
  if (skill_id) std::printf("skill     #%lld recorded in %s\n", static_cast<long long>(skill_id), a.skills.c_str());
  return 0;
}

// ---------------------------------------------------------------------------- exhaustive

int run_exhaustive(const AuraArgs& a) {
  const aura::Timing timing = aura::parse_timing(a.timing, "--timing");
  Setup s = setup(a);
  const aura::TuneTarget& t = s.target;
  aura::LiveEvaluator eval(t, s.pool.get(), a.min_time, timing);
  auto all = aura::exhaustive(t, eval, a.limit);
  std::vector<size_t> order;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].second.passed) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return all[x].second.seconds < all[y].second.seconds; });
  Config builtin = aura::builtin_config(t, s.hw);
  aura::ChoiceSolution sol = aura::solve_choices(aura::performance_model(t, s.hw));
  Config start = sol.feasible ? t.config_at(sol.index) : Config{};
  auto rank_of = [&](const Config& c) {
    for (size_t r = 0; r < order.size(); ++r)
      if (all[order[r]].first == c) return int(r) + 1;
    return 0;
  };
  size_t failed = all.size() - order.size();
  if (a.json) {
    nlohmann::ordered_json j;
    j["kernel"] = a.kernel;
    j["shape"] = t.shape_text();
    j["space"] = t.size();
    j["measured"] = all.size();
    j["failed_gate"] = failed;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& [c, m] : all)
      rows.push_back({{"config", c}, {"passed", m.passed}, {"seconds", m.seconds}, {"message", m.message}});
    j["results"] = rows;
    j["builtin_rank"] = rank_of(builtin);
    j["model_start_rank"] = rank_of(start);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s %s: %zu of %zu configurations measured, %zu failed the gate\n", a.kernel.c_str(),
              t.shape_text().c_str(), all.size(), t.size(), failed);
  for (size_t r = 0; r < order.size() && r < 10; ++r)
    std::printf("%3zu  %-50s %10s ms\n", r + 1, config_line(all[order[r]].first).c_str(),
                ms(all[order[r]].second.seconds).c_str());
  if (!order.empty()) {
    double best = all[order[0]].second.seconds;
    for (const auto& [name, c] : {std::pair<const char*, Config>{"built-in", builtin}, {"model start", start}}) {
      int rank = rank_of(c);
      if (rank > 0)
        std::printf("%-12s rank %d, %s ms (%.1f%% slower than the best)\n", name, rank,
                    ms(all[order[size_t(rank - 1)]].second.seconds).c_str(),
                    100 * (all[order[size_t(rank - 1)]].second.seconds / best - 1));
    }
  }
  return failed == all.size() ? 1 : 0;
}

// ---------------------------------------------------------------------------- skills

int run_skills(const AuraArgs& a) {
  aura::SkillStore store(a.skills, true);
  std::vector<aura::Skill> all = store.all(a.kernel);
  if (a.json) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const aura::Skill& k : all)
      arr.push_back({{"id", k.id}, {"kernel", k.kernel}, {"shape", k.shape}, {"hardware", k.hardware},
                     {"change", k.change}, {"config", k.config}, {"gain", k.gain}, {"evidence", k.evidence},
                     {"created", k.created}, {"observations", k.observations.size()}});
    std::printf("%s\n", arr.dump().c_str());
    return 0;
  }
  std::printf("%4s %-14s %-16s %-30s %6s %5s  %s\n", "id", "kernel", "shape", "change", "gain", "obs", "hardware");
  for (const aura::Skill& k : all)
    std::printf("%4lld %-14s %-16s %-30s %5.2fx %5zu  %s\n", static_cast<long long>(k.id), k.kernel.c_str(),
                k.shape.c_str(), k.change.substr(0, 30).c_str(), k.gain, k.observations.size(), k.hardware.c_str());
  std::printf("%zu skills in %s\n", all.size(), a.skills.c_str());
  return 0;
}

}  // namespace

void add_aura_command(CLI::App& app, Action* action) {
  CLI::App* au = app.add_subcommand("aura", "AuraKernel: diagnose, model and search kernel configurations");
  au->require_subcommand(1);
  auto args = std::make_shared<AuraArgs>();
  auto target = [&](CLI::App* sub) {
    sub->add_option("KERNEL", args->kernel, "A tunable kernel: gemm, rmsnorm.fwd, swiglu.fwd, swiglu.bwd, rope.fwd, cross_entropy, kv_compress.fwd|bwd, sparse_attention.fwd|bwd, mhc.{pre,post,head}_{fwd,bwd}")
        ->required();
    sub->add_option("--shape", args->shape, "MxNxK (gemm), ROWSxCOLS (row kernels, cross_entropy), TOKENSxHEADSxHEAD_DIM (rope), TOKENSxHEADSxHEAD_DIM[xRATIO] (sparse attention; ratio 0, 4 or 128, default 4), TOKENSxHEAD_DIMxRATIO (kv_compress), TOKENSxSTREAMSxD (mhc); default: the suite's full shape, v4-micro's for the last four");
    sub->add_option("--dtype", args->dtype, "Storage of the timed case: fp32 (what the model runs, mHC included) or bf16 (not gemm, cross_entropy, kv_compress)")->capture_default_str();
    sub->add_option("--hw", args->hw, "Hardware description (default: ./this-machine.toml, else a quick probe)");
    sub->add_option("--threads", args->threads, "Threads (default: all CPUs)");
    sub->add_flag("--json", args->json, "Print one JSON object");
  };
  CLI::App* tune = au->add_subcommand("tune", "Tune one kernel at one shape: diagnosis, integer program, K-Search, skills");
  target(tune);
  tune->add_option("--budget", args->budget, "Measured candidates, the built-in's profile included")->capture_default_str();
  tune->add_option("--out", args->out, "Tuning file to add the result to (TOML; created or updated)");
  tune->add_option("--skills", args->skills, "Skill database (SQLite)")->capture_default_str();
  tune->add_flag("--no-skills", args->no_skills, "Neither read nor record skills");
  tune->add_option("--min-gain", args->min_gain, "Smallest verified gain that commits a checkpoint")->capture_default_str();
  tune->add_option("--verify", args->verify,
                   "Before a gain is written, re-measure the built-in and the best in turn, this many times each "
                   "(0: trust the search's single measurements)")
      ->capture_default_str();
  tune->add_option("--min-time", args->min_time, "Seconds to time each candidate at least")->capture_default_str();
  tune->add_option("--timing", args->timing, "A candidate's time: min (the fastest of its calls), median, or auto (min on one thread's CPU clock, median on wall time)")->capture_default_str();
  tune->callback([args, action] { *action = [args] { return run_tune(*args); }; });
  CLI::App* model = au->add_subcommand("model", "Solve the kernel's performance model (no measurement)");
  target(model);
  model->callback([args, action] { *action = [args] { return run_model(*args); }; });
  CLI::App* ex = au->add_subcommand("exhaustive", "Measure every configuration of the kernel's space");
  target(ex);
  ex->add_option("--limit", args->limit, "Measure at most this many (0: all)")->capture_default_str();
  ex->add_option("--min-time", args->min_time, "Seconds to time each candidate at least")->capture_default_str();
  ex->add_option("--timing", args->timing, "A candidate's time: min (the fastest of its calls), median, or auto (min on one thread's CPU clock, median on wall time)")->capture_default_str();
  ex->callback([args, action] { *action = [args] { return run_exhaustive(*args); }; });
  CLI::App* sk = au->add_subcommand("skills", "List the skill database");
  sk->add_option("--skills", args->skills, "Skill database (SQLite)")->capture_default_str();
  sk->add_option("--kernel", args->kernel, "Only this kernel");
  sk->add_flag("--json", args->json, "Print one JSON array");
  sk->callback([args, action] { *action = [args] { return run_skills(*args); }; });
  au->footer("Models, search and skill format: docs/aura.md.");
}

namespace {
const CommandRegistration kAuraRegistration(120, add_aura_command);
}  // namespace

}  // namespace trex::cli
