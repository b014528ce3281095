#include "trex/plan/dist_calibration.h"

#include "trex/model/toml_fields.h"
#include "trex/util/error.h"

namespace trex::plan {

DistCalibration load_dist_calibration(const std::string& path) {
  toml::table root = model::TomlFields::parse_file(path);
  model::TomlFields top(path, root, "");
  const toml::table* t = top.table("dist_calibration");
  if (t == nullptr) top.fail("dist_calibration", "missing table [dist_calibration] (written by bench/dist_bench)");
  top.finish();
  model::TomlFields d(path, *t, "dist_calibration");
  DistCalibration c;
  c.file = path;
  c.ranks = d.integer("ranks", 2);
  c.host = d.text_or("host", "");
  c.load = d.number_or("load", 0, 0, 1e6);
  auto fit = [&](const char* name, CollectiveFit& f) {
    const toml::table* s = d.table(name);
    if (s == nullptr) d.fail(name, "missing table [dist_calibration." + std::string(name) + "]");
    model::TomlFields ft(path, *s, std::string("dist_calibration.") + name);
    f.latency_s = ft.number("latency_s", 0, 10);
    f.bandwidth_Bps = ft.number("bandwidth_Bps", 1, 1e15);
    ft.finish();
  };
  fit("all_to_all", c.all_to_all);
  fit("all_reduce", c.all_reduce);
  fit("all_gather", c.all_gather);
  d.finish();
  return c;
}

void calibrate_links_from_dist(Cluster& c, const DistCalibration& d) {
  for (LinkLevel& level : c.links) {
    if (level.group_size < d.ranks) continue;
    level.latency_s = d.all_to_all.latency_s;
    level.bw_unidir = d.all_to_all.bandwidth_Bps;
    level.efficiency = 1;
    level.source = "measured: all-to-all fit of bench/dist_bench on " + std::to_string(d.ranks) + " ranks (" + d.file + ")";
    return;
  }
  throw InputError(d.file, 0,
                   "dist_calibration.ranks: no link level of cluster '" + c.name + "' holds " +
                       std::to_string(d.ranks) + " devices" + (c.links.empty() ? " (it has no links: one device)" : ""));
}

}  // namespace trex::plan
