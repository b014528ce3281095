// K-Search against exhaustive measurement, on spaces small enough to measure whole.
//
// For each (kernel, shape): every configuration of the space is measured live (gate, then the
// median of at least 5 calls); then the comparisons are made on that table, so every strategy
// sees the same numbers:
//   - the built-in configuration and the integer program's start (analytic, no search);
//   - K-Search from the start with a budget of 15% of the space (its evaluator looks the
//     measured table up: the search is scored against the ground truth without fresh noise);
//   - K-Search seeded with skills from the shapes of the same kernel measured before this one
//     (their exhaustive best, through a real skill database), same budget;
//   - evaluations each search needed to come within 3% of the exhaustive best.
// Finally the exhaustive best, the start, both searches' picks and the built-in are measured
// again side by side (3 interleaved rounds, medians), so the headline ratios do not rest on one
// noisy pass. Prints a Markdown row per space (bench/results/aura_search.md keeps a run).
// With --loo, a second table: for each space, the search with an unlimited budget from the start
// alone against the same search seeded by the skills of all the other spaces of its kernel
// (leave one out, through a real skill database, its 3 nearest), both counted in evaluations
// until within 3% of the exhaustive best: the "skills halve the evaluations" goal.
// --save-tables FILE writes every measured table (one line per configuration: kernel, shape,
// config, passed, seconds); --tables FILE replays such a file instead of measuring, so later
// changes to the search are compared on the very same numbers (no re-measurement row then).
// Reproduce:  build/aura_search_bench [--threads N] [--quick] [--loo] [--spaces gemm:512x512x512,...]
//             [--passes N] [--min-time S] [--hw FILE] [--save-tables FILE | --tables FILE]
// The default is one thread, timed by the thread's CPU time, which the shared machine's other
// load disturbs far less than wall time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "trex/aura/choice_ip.h"
#include "trex/aura/hardware.h"
#include "trex/aura/live.h"
#include "trex/aura/prior.h"
#include "trex/aura/search.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"
#include "trex/core/thread_pool.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace {

using trex::aura::Config;
using trex::aura::Measurement;

struct Space {
  std::string kernel;
  std::vector<int64_t> dims;
};

struct Table {
  trex::aura::TuneTarget target;
  std::map<Config, Measurement> m;
  Config best;
  double best_s = 0;
  trex::aura::SearchResult search15;  // the cold search with 15% of the space
};

int evals_within(const trex::aura::SearchResult& r, double target_s) {
  double best = 1e300;
  for (const trex::aura::SearchNode& n : r.nodes) {
    if (n.m.passed) best = std::min(best, n.m.seconds);
    if (best <= target_s) return n.id + 1;
  }
  return -1;
}

// The observations a skill carries: the passed nodes of a search, relative to its best (what
// `trex aura tune` records), or with exhaustive = true every configuration of the table.
std::vector<trex::aura::Observation> observations_of(const Table& t, const trex::aura::SearchResult* search) {
  std::vector<trex::aura::Observation> obs;
  double best = 1e300;
  if (search) {
    for (const trex::aura::SearchNode& n : search->nodes)
      if (n.m.passed) best = std::min(best, n.m.seconds);
    for (const trex::aura::SearchNode& n : search->nodes)
      if (n.m.passed) obs.push_back({n.config, n.m.seconds / best});
  } else {
    for (const auto& [c, m] : t.m)
      if (m.passed) obs.push_back({c, m.seconds / t.best_s});
  }
  return obs;
}

// A table's exhaustive best as a skill, with the observations of `search` (its 15% search) or,
// when null, of the whole table.
trex::aura::Skill skill_of(const Table& t, const trex::aura::AuraHardware& hw,
                           const trex::aura::SearchResult* search = nullptr) {
  const Config builtin = trex::aura::builtin_config(t.target, hw);
  trex::aura::Skill k;
  k.kernel = t.target.kernel;
  k.shape = t.target.shape_class;
  k.hardware = hw.features();
  k.config = search && search->best >= 0 ? search->nodes[size_t(search->best)].config : t.best;
  k.change = trex::aura::describe_change(builtin, k.config);
  k.gain = t.m.count(builtin) && t.m.at(builtin).passed ? t.m.at(builtin).seconds / t.m.at(k.config).seconds : 1;
  k.evidence = (search ? "search " : "exhaustive ") + t.target.shape_text();
  k.observations = observations_of(t, search);
  return k;
}

// The previous sessions' use of skills: the nearest skills' configurations as seeds and their
// directions against the built-in as preferred moves; returns how many.
int seed_with_best_configs(trex::aura::SkillStore& store, const trex::aura::TuneTarget& tg, const Config& builtin,
                     const trex::aura::AuraHardware& hw, trex::aura::SearchOptions& o) {
  int used = 0;
  for (const trex::aura::Skill& k : store.nearest(tg.kernel, tg.shape_class, hw.features(), 3)) {
    o.seeds.push_back({tg.config_at(tg.index_of(k.config)), "skill #" + std::to_string(k.id)});
    for (const auto& [n, v] : k.config)
      if (builtin.count(n) && builtin.at(n) != v) o.preferred.insert({n, v > builtin.at(n) ? 1 : -1});
    ++used;
  }
  return used;
}

struct Guided {
  trex::aura::SearchResult result;
  size_t skills = 0, rules = 0;
};

// The search with the skill prior, as `trex aura tune` runs it: the prior learned from the
// store's skills of the same kernel, hardware and roofline regime, its best-predicted
// configuration first, its rules pruning before evaluation.
Guided guided_search(const std::vector<trex::aura::Skill>& skills, const trex::aura::TuneTarget& tg,
                     const trex::aura::ChoiceProblem& pr, const Config& start, const trex::aura::Evaluator& eval,
                     int budget, const trex::aura::AuraHardware& hw) {
  trex::aura::SkillPrior prior(tg, trex::aura::prior_evidence(skills, tg, hw));
  trex::aura::SearchOptions o;
  o.budget = budget;
  trex::aura::SearchSeed root = trex::aura::warm_start(prior, tg, {start, "start"}, o);
  Guided g;
  g.result = trex::aura::k_search(tg, pr, root, eval, o);
  g.skills = prior.skills();
  g.rules = prior.rules().size();
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;  // one thread: candidates are timed by thread CPU time (see live.h)
  bool quick = false;
  bool loo = false;
  bool verbose = false;  // --verbose: every node of the leave-one-out searches on stderr
  std::string only;  // "kernel:MxNxK,kernel:RxC": these spaces instead of the defaults
  std::string save_tables, load_tables, hw_file;
  int passes = 1;         // exhaustive passes; a configuration's time is the median over them
  double min_time = 0;    // per candidate (0: 0.03 s, --quick 0.005 s)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--loo")) loo = true;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--verbose")) verbose = true;
    else if (!std::strcmp(argv[i], "--spaces") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--save-tables") && i + 1 < argc) save_tables = argv[++i];
    else if (!std::strcmp(argv[i], "--tables") && i + 1 < argc) load_tables = argv[++i];
    else if (!std::strcmp(argv[i], "--hw") && i + 1 < argc) hw_file = argv[++i];
    else if (!std::strcmp(argv[i], "--passes") && i + 1 < argc) passes = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = std::atof(argv[++i]);
  }
  trex::core::ThreadPool pool(threads);
  trex::aura::AuraHardware hw = trex::aura::load_hardware(hw_file, pool.num_threads());
  std::printf("hardware: %s, %s (%s), %d threads\n", hw.name.c_str(), hw.features().c_str(), hw.source.c_str(),
              pool.num_threads());
  std::vector<Space> spaces;
  if (quick) {
    spaces = {{"gemm", {256, 256, 256}}, {"gemm", {128, 512, 256}}, {"swiglu.fwd", {512, 1024}}};
  } else {
    spaces = {{"gemm", {512, 512, 512}},       {"gemm", {1024, 1024, 1024}}, {"gemm", {128, 2048, 1024}},
              {"cross_entropy", {512, 32768}}, {"cross_entropy", {256, 65536}},
              {"swiglu.fwd", {4096, 4096}},    {"swiglu.fwd", {1024, 8192}}};
  }
  if (!only.empty()) {
    spaces.clear();
    size_t pos = 0;
    while (pos < only.size()) {
      size_t end = only.find(',', pos);
      if (end == std::string::npos) end = only.size();
      std::string item = only.substr(pos, end - pos);
      size_t colon = item.find(':');
      std::string k = item.substr(0, colon);
      spaces.push_back({k, trex::aura::parse_shape(k, colon == std::string::npos ? "" : item.substr(colon + 1))});
      pos = end + 1;
    }
  }
  // Replayed tables: kernel -> shape -> configuration -> measurement.
  std::map<std::string, std::map<Config, Measurement>> replayed;
  if (!load_tables.empty()) {
    std::ifstream in(load_tables);
    if (!in) throw trex::InputError(load_tables + ": cannot read");
    std::string line;
    std::vector<Space> order;
    for (int no = 1; std::getline(in, line); ++no) {
      std::istringstream ls(line);
      std::string kernel, shape, config;
      int passed = 0;
      double seconds = 0;
      if (!(ls >> kernel >> shape >> config >> passed >> seconds))
        throw trex::InputError(load_tables + ":" + std::to_string(no) + ": expected KERNEL SHAPE CONFIG PASSED SECONDS");
      const std::string key = kernel + ":" + shape;
      if (!replayed.count(key)) order.push_back({kernel, trex::aura::parse_shape(kernel, shape)});
      replayed[key][trex::aura::parse_config_text(config)] = {passed != 0, seconds, "replayed"};
    }
    if (only.empty()) spaces = order;
  }
  std::string saved;
  if (!(min_time > 0)) min_time = quick ? 0.005 : 0.03;
  const std::string db = (std::filesystem::temp_directory_path() /
                          ("aura_search_bench_skills_" + std::to_string(::getpid()) + ".db")).string();
  std::filesystem::remove(db);
  trex::aura::SkillStore store(db);
  std::printf("\n| kernel | shape | space | built-in / best | start / best | search: budget, best / best, evals to 3%% | "
              "with skills: best / best, evals to 3%% | re-measured ms: best, start, search, skills, built-in |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  std::vector<Table> tables;
  for (const Space& sp : spaces) {
    Table& t = tables.emplace_back();
    t.target = trex::aura::make_target(sp.kernel, sp.dims, hw);
    const trex::aura::TuneTarget& tg = t.target;
    const std::string key = sp.kernel + ":" + tg.shape_text();
    const bool replay_only = !load_tables.empty();
    std::unique_ptr<trex::aura::LiveEvaluator> live;
    if (replay_only) {
      if (!replayed.count(key)) throw trex::InputError(load_tables + ": no table for " + key);
      t.m = replayed.at(key);
      if (t.m.size() != tg.size())
        throw trex::InputError(load_tables + ": " + key + " holds " + std::to_string(t.m.size()) + " of " +
                               std::to_string(tg.size()) + " configurations (another machine's space?)");
    } else {
      live = std::make_unique<trex::aura::LiveEvaluator>(tg, &pool, min_time);
      std::fprintf(stderr, "exhaustive %s %s: %zu configurations\n", sp.kernel.c_str(), tg.shape_text().c_str(), tg.size());
      // Several passes, each over the whole space, so a burst of load hits one pass of a
      // configuration rather than all its calls; the median pass counts.
      std::map<Config, std::vector<Measurement>> all;
      for (int pass = 0; pass < passes; ++pass)
        for (auto& [c, m] : trex::aura::exhaustive(tg, *live)) all[c].push_back(m);
      for (auto& [c, ms] : all) {
        std::sort(ms.begin(), ms.end(), [](const Measurement& a, const Measurement& b) {
          return a.passed != b.passed ? a.passed < b.passed : a.seconds < b.seconds;  // failures first
        });
        const Measurement& m = ms[ms.size() / 2];
        t.m[c] = m;
        char num[64];
        std::snprintf(num, sizeof num, " %d %.9g\n", m.passed ? 1 : 0, m.seconds);
        saved += sp.kernel + " " + tg.shape_text() + " " + trex::aura::config_text(c) + num;
      }
      if (!save_tables.empty()) trex::write_file_atomic(save_tables, saved);  // after every space
    }
    t.best_s = 1e300;
    for (const auto& [c, m] : t.m)
      if (m.passed && m.seconds < t.best_s) {
        t.best_s = m.seconds;
        t.best = c;
      }
    trex::aura::ChoiceProblem pr = trex::aura::performance_model(tg, hw);
    trex::aura::ChoiceSolution sol = trex::aura::solve_choices(pr);
    Config start = tg.config_at(sol.index), builtin = trex::aura::builtin_config(tg, hw);
    trex::aura::Evaluator replay = [&](const Config& c) { return t.m.at(c); };
    const int budget = std::max<int>(1, int(tg.size() * 15 / 100));
    trex::aura::SearchOptions cold;
    cold.budget = budget;
    trex::aura::SearchResult rc = trex::aura::k_search(tg, pr, {start, "start"}, replay, cold);
    t.search15 = rc;
    // Skills from the shapes measured before this one (other shapes of the same kernel), as
    // their 15% searches recorded them.
    Guided gw = guided_search(store.all(tg.kernel), tg, pr, start, replay, budget, hw);
    const trex::aura::SearchResult& rw = gw.result;
    const size_t skills_used = gw.skills;
    auto pick = [&](const trex::aura::SearchResult& r) { return r.best >= 0 ? r.nodes[size_t(r.best)].config : start; };
    auto secs = [&](const Config& c) { return t.m.count(c) && t.m.at(c).passed ? t.m.at(c).seconds : NAN; };
    const double within = t.best_s * 1.03;
    // Side-by-side re-measurement of the configurations the row compares.
    std::vector<Config> again = {t.best, start, pick(rc), pick(rw), builtin};
    std::vector<std::vector<double>> runs(again.size());
    for (int round = 0; round < 3 && live; ++round)
      for (size_t i = 0; i < again.size(); ++i) {
        Measurement m = (*live)(again[i]);
        runs[i].push_back(m.passed ? m.seconds : NAN);
      }
    auto med = [&](size_t i) {
      std::vector<double> v = runs[i];
      if (v.size() < 3) return double(NAN);
      std::sort(v.begin(), v.end());
      return v[1] * 1e3;
    };
    std::string warm_cell = skills_used ? "" : " (no skills yet)";
    std::printf("| %s | %s | %zu | %.3f | %.3f | %d, %.3f, %d | %.3f, %d%s | %.3f, %.3f, %.3f, %.3f, %.3f |\n",
                tg.kernel.c_str(), tg.shape_text().c_str(), tg.size(), secs(builtin) / t.best_s, secs(start) / t.best_s,
                budget, secs(pick(rc)) / t.best_s, evals_within(rc, within), secs(pick(rw)) / t.best_s,
                evals_within(rw, within), warm_cell.c_str(), med(0), med(1), med(2), med(3), med(4));
    std::fprintf(stderr, "  best %s; start %s; search %s; with skills %s\n", trex::aura::config_text(t.best).c_str(),
                 trex::aura::config_text(start).c_str(), trex::aura::config_text(pick(rc)).c_str(),
                 trex::aura::config_text(pick(rw)).c_str());
    std::fflush(stdout);
    // This shape's search becomes a skill for the shapes after it.
    store.add(skill_of(t, hw, &t.search15));
  }
  std::filesystem::remove(db);
  if (!loo) return 0;
  std::printf("\n| kernel | shape | space | from the start | best-config seeds (sessions 1-3) | prior from the "
              "others' 15%% searches (skills, rules) | prior from the others' exhaustive tables (skills, rules) | "
              "ratio: searches, tables |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  int sum_cold = 0, sum_seeds = 0, sum_search = 0, sum_tables = 0;
  std::vector<double> ratio_search, ratio_tables;
  for (size_t i = 0; i < tables.size(); ++i) {
    const Table& t = tables[i];
    const trex::aura::TuneTarget& tg = t.target;
    trex::aura::ChoiceProblem pr = trex::aura::performance_model(tg, hw);
    Config start = tg.config_at(trex::aura::solve_choices(pr).index), builtin = trex::aura::builtin_config(tg, hw);
    trex::aura::Evaluator replay = [&](const Config& c) { return t.m.at(c); };
    trex::aura::SearchOptions cold;
    cold.budget = int(tg.size());
    const std::string loo_db = db + ".loo";
    std::filesystem::remove(loo_db);
    trex::aura::SearchOptions warm = cold;
    int used = 0;
    std::vector<trex::aura::Skill> from_searches, from_tables;
    {
      // Through a real skill database: written, then read back with the observations.
      trex::aura::SkillStore a(loo_db);
      for (size_t j = 0; j < tables.size(); ++j)
        if (j != i && tables[j].target.kernel == tg.kernel && tables[j].m.count(tables[j].best))
          a.add(skill_of(tables[j], hw, &tables[j].search15));
      used = seed_with_best_configs(a, tg, builtin, hw, warm);
      from_searches = a.all(tg.kernel);
    }
    std::filesystem::remove(loo_db);
    {
      trex::aura::SkillStore b(loo_db);
      for (size_t j = 0; j < tables.size(); ++j)
        if (j != i && tables[j].target.kernel == tg.kernel && tables[j].m.count(tables[j].best)) b.add(skill_of(tables[j], hw));
      from_tables = b.all(tg.kernel);
    }
    std::filesystem::remove(loo_db);
    const double within = t.best_s * 1.03;
    trex::aura::SearchResult rcold = trex::aura::k_search(tg, pr, {start, "start"}, replay, cold);
    int ec = evals_within(rcold, within);
    int ew = evals_within(trex::aura::k_search(tg, pr, {start, "start"}, replay, warm), within);
    Guided gs = guided_search(from_searches, tg, pr, start, replay, cold.budget, hw);
    Guided gt = guided_search(from_tables, tg, pr, start, replay, cold.budget, hw);
    int es = evals_within(gs.result, within), et = evals_within(gt.result, within);
    // A search that never came within 3% (its rules pruned every such configuration) is
    // charged the whole space: what falling back to exhaustive measurement would cost.
    const int whole = int(tg.size());
    if (ec < 0) ec = whole;
    if (ew < 0) ew = whole;
    if (es < 0) es = whole;
    if (et < 0) et = whole;
    if (verbose)
      for (const auto& [name, r] : {std::pair<const char*, const trex::aura::SearchResult*>{"cold", &rcold},
                                    {"prior/searches", &gs.result}, {"prior/tables", &gt.result}}) {
        std::fprintf(stderr, "%s %s:\n", tg.shape_text().c_str(), name);
        for (const trex::aura::SearchNode& n : r->nodes) {
          if (n.id >= 16) break;
          std::fprintf(stderr, "  %2d %-8s %.3f %s\n", n.id + 1, n.origin.c_str(), n.m.seconds / t.best_s,
                       trex::aura::config_text(n.config).c_str());
        }
      }
    sum_cold += ec;
    sum_seeds += ew;
    sum_search += es;
    sum_tables += et;
    ratio_search.push_back(double(es) / ec);
    ratio_tables.push_back(double(et) / ec);
    std::printf("| %s | %s | %zu | %d | %d (%d) | %d (%zu, %zu) | %d (%zu, %zu) | %.2f, %.2f |\n", tg.kernel.c_str(),
                tg.shape_text().c_str(), tg.size(), ec, ew, used, es, gs.skills, gs.rules, et, gt.skills, gt.rules,
                double(es) / ec, double(et) / ec);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? double(NAN) : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::printf("| all (sum) | | | %d | %d | %d | %d | %.2f, %.2f |\n", sum_cold, sum_seeds, sum_search, sum_tables,
              sum_cold > 0 ? double(sum_search) / sum_cold : NAN, sum_cold > 0 ? double(sum_tables) / sum_cold : NAN);
  std::printf("| median of the per-space ratios | | | | | | | %.2f, %.2f |\n", median(ratio_search), median(ratio_tables));
  return 0;
}
