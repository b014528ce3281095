#include "trex/plan/ladder.h"


#include "trex/model/toml_fields.h"
#include "trex/plan/search.h"
#include "trex/plan/strategy_toml.h"
#include "trex/util/error.h"

namespace trex::plan {

using model::TomlFields;

Ladder load_ladder(const std::string& path) {
  toml::table root = TomlFields::parse_file(path);
  TomlFields top(path, root, "");
  Ladder l;
  l.file = path;
  const toml::table* lt = top.table("ladder");
  if (lt == nullptr) throw InputError(path, 0, "ladder: missing table [ladder]");
  {
    TomlFields f(path, *lt, "ladder");
    l.name = f.text("name");
    l.source = f.text("source");
    l.model = model::load_model_config(model::resolve_beside(path, f.text("model")));
    l.cluster = load_cluster(model::resolve_beside(path, f.text("cluster")));
    l.run = load_run(model::resolve_beside(path, f.text("run")));
    l.convention = model::parse_convention(f.text_or("convention", "trex"), "ladder.convention");
    f.allow({"note"});
    f.finish();
  }
  for (const toml::table* rt : top.tables("rung")) {
    TomlFields f(path, *rt, "rung");
    LadderRung r;
    r.name = f.text("name");
    r.assumptions = f.text("assumptions");
    r.search = f.boolean_or("search", false);
    r.allow_swap = f.boolean_or("allow_swap", false);
    r.reported_mfu = f.number_or("reported_mfu", 0, 0, 1);
    const toml::table* st = f.table("strategy");
    if (st == nullptr) f.fail("strategy", "missing (each rung states its strategy, or the fixed fields for a search)");
    r.strategy = read_strategy(*st, path);
    r.efficiency = l.cluster.eff;
    if (const toml::table* et = f.table("efficiency")) {
      TomlFields e(path, *et, "rung.efficiency");
      r.efficiency.matmul = e.number_or("matmul", r.efficiency.matmul, 0.01, 1);
      r.efficiency.attention = e.number_or("attention", r.efficiency.attention, 0.01, 1);
      r.efficiency.memory = e.number_or("memory", r.efficiency.memory, 0.01, 1);
      r.efficiency.launch_s = e.number_or("launch_s", r.efficiency.launch_s, 0, 1);
      r.efficiency.comm_launch_s = e.number_or("comm_launch_s", r.efficiency.comm_launch_s, 0, 1);
      r.efficiency.source = e.text("source");
      e.finish();
    }
    f.finish();
    l.rungs.push_back(r);
  }
  top.finish();
  if (l.rungs.empty()) throw InputError(path, 0, "rung: no [[rung]] tables");
  return l;
}

std::vector<RungResult> run_ladder(const Ladder& l) {
  std::vector<RungResult> out;
  for (const LadderRung& r : l.rungs) {
    Cluster c = l.cluster;
    c.eff = r.efficiency;
    RungResult res;
    res.rung = r;
    if (r.search) {
      SearchOptions o;
      o.top_k = 1;
      o.base = r.strategy;
      o.allow_swap = r.allow_swap;
      SearchResult s = search(l.model, c, l.run, o);
      if (s.top.empty())
        throw InputError(l.file, 0, "rung \"" + r.name + "\": the search found no strategy that fits");
      res.prediction = s.top.front();
    } else {
      res.prediction = predict(l.model, c, l.run, r.strategy);
    }
    out.push_back(res);
  }
  return out;
}

}  // namespace trex::plan
