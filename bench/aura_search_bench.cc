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
// Reproduce:  build/aura_search_bench [--threads N] [--quick] [--loo] [--spaces gemm:512x512x512,...]
// The default is one thread, timed by the thread's CPU time, which the shared machine's other
// load disturbs far less than wall time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "trex/aura/choice_ip.h"
#include "trex/aura/hardware.h"
#include "trex/aura/live.h"
#include "trex/aura/search.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"
#include "trex/core/thread_pool.h"

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
};

int evals_within(const trex::aura::SearchResult& r, double target_s) {
  double best = 1e300;
  for (const trex::aura::SearchNode& n : r.nodes) {
    if (n.m.passed) best = std::min(best, n.m.seconds);
    if (best <= target_s) return n.id + 1;
  }
  return -1;
}

// A table's exhaustive best as a skill (what a search on this shape would have recorded).
trex::aura::Skill skill_of(const Table& t, const trex::aura::AuraHardware& hw) {
  const Config builtin = trex::aura::builtin_config(t.target, hw);
  trex::aura::Skill k;
  k.kernel = t.target.kernel;
  k.shape = t.target.shape_class;
  k.hardware = hw.features();
  k.config = t.best;
  k.change = trex::aura::describe_change(builtin, t.best);
  k.gain = t.m.count(builtin) && t.m.at(builtin).passed ? t.m.at(builtin).seconds / t.best_s : 1;
  k.evidence = "exhaustive " + t.target.shape_text();
  return k;
}

// Seeds the search with the store's nearest skills, as `trex aura tune` does; returns how many.
int seed_with_skills(trex::aura::SkillStore& store, const trex::aura::TuneTarget& tg, const Config& builtin,
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

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;  // one thread: candidates are timed by thread CPU time (see live.h)
  bool quick = false;
  bool loo = false;
  std::string only;  // "kernel:MxNxK,kernel:RxC": these spaces instead of the defaults
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--loo")) loo = true;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--spaces") && i + 1 < argc) only = argv[++i];
  }
  trex::core::ThreadPool pool(threads);
  trex::aura::AuraHardware hw = trex::aura::load_hardware("", pool.num_threads());
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
  const double min_time = quick ? 0.005 : 0.03;
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
    trex::aura::LiveEvaluator eval(tg, &pool, min_time);
    std::fprintf(stderr, "exhaustive %s %s: %zu configurations\n", sp.kernel.c_str(), tg.shape_text().c_str(), tg.size());
    for (auto& [c, m] : trex::aura::exhaustive(tg, eval)) t.m[c] = m;
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
    // Skills from the shapes measured before this one (other shapes of the same kernel).
    trex::aura::SearchOptions warm = cold;
    const int skills_used = seed_with_skills(store, tg, builtin, hw, warm);
    trex::aura::SearchResult rw = trex::aura::k_search(tg, pr, {start, "start"}, replay, warm);
    auto pick = [&](const trex::aura::SearchResult& r) { return r.best >= 0 ? r.nodes[size_t(r.best)].config : start; };
    auto secs = [&](const Config& c) { return t.m.count(c) && t.m.at(c).passed ? t.m.at(c).seconds : NAN; };
    const double within = t.best_s * 1.03;
    // Side-by-side re-measurement of the configurations the row compares.
    std::vector<Config> again = {t.best, start, pick(rc), pick(rw), builtin};
    std::vector<std::vector<double>> runs(again.size());
    for (int round = 0; round < 3; ++round)
      for (size_t i = 0; i < again.size(); ++i) {
        Measurement m = eval(again[i]);
        runs[i].push_back(m.passed ? m.seconds : NAN);
      }
    auto med = [&](size_t i) {
      std::vector<double> v = runs[i];
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
    // This shape's exhaustive best becomes a skill for the shapes after it.
    store.add(skill_of(t, hw));
  }
  std::filesystem::remove(db);
  if (!loo) return 0;
  std::printf("\n| kernel | shape | space | from the start: evals to 3%% | with the other shapes' skills: evals to 3%% (skills) | ratio |\n");
  std::printf("|---|---|---|---|---|---|\n");
  int sum_cold = 0, sum_warm = 0;
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
    {
      trex::aura::SkillStore others(loo_db);
      for (size_t j = 0; j < tables.size(); ++j)
        if (j != i && tables[j].target.kernel == tg.kernel && tables[j].m.count(tables[j].best))
          others.add(skill_of(tables[j], hw));
      used = seed_with_skills(others, tg, builtin, hw, warm);
    }
    std::filesystem::remove(loo_db);
    const double within = t.best_s * 1.03;
    int ec = evals_within(trex::aura::k_search(tg, pr, {start, "start"}, replay, cold), within);
    int ew = evals_within(trex::aura::k_search(tg, pr, {start, "start"}, replay, warm), within);
    sum_cold += ec;
    sum_warm += ew;
    std::printf("| %s | %s | %zu | %d | %d (%d) | %.2f |\n", tg.kernel.c_str(), tg.shape_text().c_str(), tg.size(), ec,
                ew, used, ec > 0 ? double(ew) / ec : NAN);
  }
  std::printf("| all | | | %d | %d | %.2f |\n", sum_cold, sum_warm, sum_cold > 0 ? double(sum_warm) / sum_cold : NAN);
  return 0;
}
