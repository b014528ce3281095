// model_check.cc (session 16, engineer aura; kept by fixer fix25 so the README's s10 row can be
// reproduced): the GEMM model's predicted time per configuration of a saved aura_search_bench
// table (target.h choice_cost) against the table's pass-levelled median, per parameter value
// (best over the other parameters), each relative to the best; and the model's start.
// `aura_search_bench --model-check` does this for the tables of today's grid; this program
// also reads the one-thread tables of sessions 8-11, whose GEMM spaces are an older grid
// (index_of maps each value outside today's space to its nearest candidate, e.g. mc).
// Build against a Release build/ (the link line of aura_search_bench in build/build.ninja):
//   cd build && g++ $(FLAGS INCLUDES DEFINES of aura_search_bench.cc.o) \
//     -o model_check ../bench/results/aura_s16/model_check.cc $(LINK_LIBRARIES of aura_search_bench)
// Run: model_check TABLE HW.toml THREADS, e.g.
//   model_check bench/results/aura_search_s10_1t_a.tsv bench/results/profile_v4_micro_machine2_l3_32m.toml 1
// Not part of the build or the tests: a record of how the README's figures were computed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include "trex/aura/hardware.h"
#include "trex/aura/target.h"
using namespace trex::aura;
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); size_t n = v.size(); return n % 2 ? v[n/2] : (v[n/2-1]+v[n/2])/2; }
int main(int argc, char** argv) {
  std::string table = argv[1], hwf = argv[2]; int threads = std::atoi(argv[3]);
  AuraHardware hw = load_hardware(hwf, threads);
  std::ifstream in(table); std::string line;
  std::map<std::string, std::vector<std::pair<Config, std::vector<double>>>> T;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line); std::string k, sh, cf; int ok; double m;
    s >> k >> sh >> cf >> ok >> m; if (k != "gemm" || !ok) continue;
    std::vector<double> ps; double x; while (s >> x) ps.push_back(x);
    Config c; std::istringstream cs(cf); std::string kv;
    while (std::getline(cs, kv, ';')) { auto e = kv.find('='); c[kv.substr(0, e)] = std::stoll(kv.substr(e + 1)); }
    T[sh].push_back({c, ps});
  }
  for (auto& [sh, rows] : T) {
    std::vector<int64_t> dims; { std::istringstream s(sh); std::string d; while (std::getline(s, d, 'x')) dims.push_back(std::stoll(d)); }
    TuneTarget t = make_target("gemm", dims, hw);
    ChoiceProblem pr = performance_model(t, hw);
    size_t P = rows[0].second.size();
    std::vector<double> mm; for (auto& r : rows) mm.push_back(med(r.second));
    std::vector<double> lev(P); for (size_t p = 0; p < P; ++p) { std::vector<double> v; for (size_t i = 0; i < rows.size(); ++i) v.push_back(rows[i].second[p] / mm[i]); lev[p] = med(v); }
    double best = 1e9, pbest = 1e9; std::map<std::string, std::map<int64_t, std::pair<double, double>>> per;
    std::vector<std::pair<double,double>> mp;
    for (auto& [c, ps] : rows) {
      std::vector<double> v; for (size_t p = 0; p < P; ++p) v.push_back(ps[p] / lev[p]);
      double meas = med(v), pred = choice_cost(pr, t.index_of(c));
      mp.push_back({meas, pred});
      best = std::min(best, meas); pbest = std::min(pbest, pred);
      for (auto& [name, v] : c) { auto& e = per[name].try_emplace(v, 1e9, 1e9).first->second;
      e.first = std::min(e.first, meas); e.second = std::min(e.second, pred); }
    }
    ChoiceSolution sol = solve_choices(pr);
    Config st = t.config_at(sol.index);
    double stm = 0; for (size_t i = 0; i < rows.size(); ++i) if (rows[i].first == st) stm = mp[i].first;
    std::printf("%s [%s] start kc%lld mc%lld nc%lld s%lld u%lld: %.3f of best; pred best %.3f ms meas best %.3f ms\n  kc meas/pred(rel. to best):", sh.c_str(), hw.features().c_str(),
      (long long)st.at("kc"), (long long)st.at("mc"), (long long)st.at("nc"), (long long)st.at("split"), (long long)st.at("ukernel"), stm / best, pbest * 1e3, best * 1e3);
    for (auto& [name, m] : per) { std::printf("\n  %s meas/pred:", name.c_str());
      for (auto& [v, e] : m) std::printf(" %lld:%.3f/%.3f", (long long)v, e.first / best, e.second / pbest); }
    std::printf("\n");
  }
}
