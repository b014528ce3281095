#include "trex/plan/cluster.h"

#include <algorithm>
#include <cstdlib>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"

#include "trex/model/toml_fields.h"
#include "trex/util/error.h"

namespace trex::plan {

using model::TomlFields;

const LinkLevel& Cluster::level_for_extent(long extent) const {
  for (const LinkLevel& l : links)
    if (l.group_size >= extent) return l;
  return links.back();
}

const DispatcherRate* Cluster::dispatch_rate(const std::string& dispatcher, long ep) const {
  const DispatcherRate* best = nullptr;
  for (const DispatcherRate& r : ep_dispatch_rates) {
    if (r.dispatcher != dispatcher) continue;
    if (best == nullptr) { best = &r; continue; }
    long d = std::labs(r.ranks - ep), db = std::labs(best->ranks - ep);
    if (d < db || (d == db && r.ranks > best->ranks)) best = &r;
  }
  return best;
}

namespace {

DispatcherRate read_dispatcher_rate(TomlFields& f) {
  DispatcherRate r;
  r.dispatcher = f.choice("dispatcher", {"deepep", "hybridep"});
  r.ranks = f.integer("ranks", 2);
  r.sms = f.integer("sms", 1);
  r.dispatch_bf16 = f.number("dispatch_bytes_per_s", 1e6, 1e14);
  r.dispatch_fp8 = f.number("dispatch_fp8_bytes_per_s", 1e6, 1e14);
  r.combine = f.number("combine_bytes_per_s", 1e6, 1e14);
  r.source = f.text("source");
  f.allow({"confidence", "note"});
  f.finish();
  return r;
}

LinkLevel read_link(TomlFields& f) {
  LinkLevel l;
  l.name = f.text("level");
  l.group_size = f.integer("group_size", 1);
  l.bw_unidir = f.number("bw_unidir_bytes_per_s", 1e3, 1e15);
  l.latency_s = f.number_or("latency_s", 0, 0, 1);
  l.efficiency = f.number_or("efficiency", 1, 0.01, 1);
  l.source = f.text("source");
  f.allow({"confidence", "note"});
  f.finish();
  return l;
}

}  // namespace

void check_reach(const Cluster& c, const std::string& path);

Cluster load_cluster(const std::string& path) {
  toml::table root = TomlFields::parse_file(path);
  TomlFields top(path, root, "");
  Cluster c;
  c.file = path;
  const toml::table* ct = top.table("cluster");
  if (ct == nullptr) throw InputError(path, 0, "cluster: missing table [cluster]");
  {
    TomlFields f(path, *ct, "cluster");
    c.name = f.text("name");
    c.source = f.text("source");
    c.device_file = model::resolve_beside(path, f.text("device"));
    c.nodes = f.integer("nodes", 1);
    c.devices_per_node = f.integer("devices_per_node", 1);
    c.reserved_bytes = f.number_or("reserved_bytes", 0, 0, 1e15);
    c.reserved_source = f.text_or("reserved_source", "");
    c.host_bytes_per_device = f.number_or("host_bytes_per_device", 0, 0, 1e16);
    c.host_link_bw = f.number_or("host_link_bytes_per_s", 0, 0, 1e15);
    c.host_source = f.text_or("host_source", "");
    if ((c.host_bytes_per_device > 0 || c.host_link_bw > 0) && c.host_source.empty())
      f.fail("host_source", "missing (host memory and host link figures need a source)");
    f.allow({"confidence", "note"});
    f.finish();
    if (c.devices() > 10'000'000) f.fail("nodes", "implausibly many devices");
  }
  try {
    c.device = core::load_hw_description(c.device_file);
  } catch (const InputError& e) {
    throw InputError(path, 0, std::string("cluster.device: ") + e.what());
  }
  c.peak_flops = c.device.peak.flops_bf16.value;
  const core::HwMemory& hbm = c.device.device_memory();
  c.hbm_bytes = hbm.size_bytes.value;
  if (!hbm.bw_read) throw InputError(path, 0, "cluster.device: the device memory has no bw_read");
  c.hbm_bw = hbm.bw_read->value;
  if (c.reserved_bytes >= c.hbm_bytes) throw InputError(path, 0, "cluster.reserved_bytes: not below the device memory");

  // Efficiency: the device's [calibration] first, then the cluster's [efficiency] overrides.
  if (const auto& cal = c.device.calibration) {
    if (cal->compute_efficiency) c.eff.matmul = cal->compute_efficiency->value;
    if (cal->memory_efficiency) c.eff.memory = cal->memory_efficiency->value;
    if (cal->launch_s_matrix) c.eff.launch_s = cal->launch_s_matrix->value;
    if (cal->launch_s_comm) c.eff.comm_launch_s = cal->launch_s_comm->value;
    c.eff.source = "device calibration (" + c.device_file + ")";
  }
  if (const toml::table* et = top.table("efficiency")) {
    TomlFields f(path, *et, "efficiency");
    c.eff.matmul = f.number_or("matmul", c.eff.matmul, 0.01, 1);
    c.eff.attention = f.number_or("attention", c.eff.attention, 0.01, 1);
    c.eff.memory = f.number_or("memory", c.eff.memory, 0.01, 1);
    c.eff.launch_s = f.number_or("launch_s", c.eff.launch_s, 0, 1);
    c.eff.comm_launch_s = f.number_or("comm_launch_s", c.eff.comm_launch_s, 0, 1);
    c.eff.fp8_matmul = f.number_or("fp8_matmul", c.eff.matmul, 0.01, 1);
    c.eff.gemm_half_dim = f.number_or("gemm_half_dim", 0, 0, 1e5);
    c.eff.gemm_half_dim_core_flops = f.number_or("gemm_half_dim_core_flops", 0, 0, 1e16);
    c.eff.gemm_half_dim_k = f.number_or("gemm_half_dim_k", 0, 0, 1e5);
    if (f.has("gemm_half_dim_k") && !f.has("gemm_half_dim")) f.fail("gemm_half_dim_k", "needs gemm_half_dim (the curve of m and n)");
    if (f.has("gemm_tiles")) {
      std::vector<long> t = f.integers("gemm_tiles", 1);
      if (t.empty() || t.size() % 2 != 0) f.fail("gemm_tiles", "needs rows, columns pairs (e.g. [256, 128, 128, 128])");
      for (size_t i = 0; i + 1 < t.size(); i += 2) c.eff.gemm_tiles.push_back({t[i], t[i + 1]});
      if (!f.has("gemm_tile_source")) f.fail("gemm_tile_source", "missing (the tile set needs a source)");
      if (c.device.device.cores_matrix.value <= 0)
        f.fail("gemm_tiles", "needs the device's cores_matrix (" + c.device_file + ")");
    }
    c.eff.source = f.text("source");
    f.allow({"confidence", "note", "fp8_source", "gemm_source", "gemm_tile_source"});
    if (f.has("gemm_half_dim") && !f.has("gemm_source")) f.fail("gemm_source", "missing (the GEMM shape curve needs a source)");
    if (c.eff.gemm_half_dim_core_flops > 0 && c.device.device.cores_matrix.value <= 0)
      f.fail("gemm_half_dim_core_flops", "needs the device's cores_matrix (" + c.device_file + ")");
    f.finish();
  } else if (c.eff.source.empty()) {
    throw InputError(path, 0, "efficiency: missing table [efficiency] (and the device has no [calibration])");
  }

  if (const toml::table* sc = top.table("scale")) {
    TomlFields f(path, *sc, "scale");
    c.scale.straggler_cv = f.number_or("straggler_cv", 0, 0, 0.5);
    c.scale.bw_loss_per_doubling = f.number_or("bw_loss_per_doubling", 0, 0, 0.5);
    c.scale.source = f.text("source");
    f.allow({"confidence", "note"});
    f.finish();
  }

  std::vector<const toml::table*> lt = top.tables("link");
  for (const toml::table* t : lt) {
    TomlFields f(path, *t, "link");
    c.links.push_back(read_link(f));
  }
  for (const toml::table* t : top.tables("ep_dispatcher")) {
    TomlFields f(path, *t, "ep_dispatcher");
    DispatcherRate r = read_dispatcher_rate(f);
    // dispatch_rate() picks one measurement per dispatcher and rank count: a second one (another
    // SM count, another run) would be dropped unseen, so the file must choose.
    for (const DispatcherRate& prior : c.ep_dispatch_rates)
      if (prior.dispatcher == r.dispatcher && prior.ranks == r.ranks)
        f.fail("ranks", r.dispatcher + " at " + std::to_string(r.ranks) +
                            " ranks given twice (one measurement per dispatcher and rank count)");
    c.ep_dispatch_rates.push_back(r);
  }
  top.finish();
  if (c.links.empty()) throw InputError(path, 0, "link: no [[link]] levels (a cluster needs at least one)");
  for (size_t i = 1; i < c.links.size(); ++i)
    if (c.links[i].group_size <= c.links[i - 1].group_size || c.links[i].group_size % c.links[i - 1].group_size != 0)
      throw InputError(path, 0, "link: level \"" + c.links[i].name + "\" group_size " +
                                    std::to_string(c.links[i].group_size) + " must be a larger multiple of the level inside it (" +
                                    std::to_string(c.links[i - 1].group_size) + ")");
  check_reach(c, path);
  return c;
}

Cluster cluster_from_device(const std::string& hw_path) {
  Cluster c;
  c.file = hw_path;
  c.device_file = hw_path;
  c.device = core::load_hw_description(hw_path);
  c.name = c.device.device.name;
  c.source = "hardware description " + hw_path;
  c.nodes = 1;
  c.devices_per_node = 1;
  bool cpu = c.device.device.kind == "cpu";
  c.peak_flops = cpu ? c.device.peak.flops_fp32.value : c.device.peak.flops_bf16.value;
  const core::HwMemory& mem = c.device.device_memory();
  c.hbm_bytes = mem.size_bytes.value;
  if (!mem.bw_read) throw InputError(hw_path, 0, "the device memory has no bw_read");
  c.hbm_bw = mem.bw_read->value;
  if (cpu && c.device.stream && c.device.stream->triad) c.hbm_bw = c.device.stream->triad->value;
  c.eff.matmul = 0.8;
  c.eff.attention = 0.5;
  c.eff.memory = cpu ? 1.0 : 0.8;
  c.eff.launch_s = 2e-6;
  c.eff.comm_launch_s = 0;
  c.eff.source = "trex defaults for a single device (docs/plan.md), not measured";
  if (const auto& cal = c.device.calibration) {
    if (cal->compute_efficiency) c.eff.matmul = cal->compute_efficiency->value;
    if (cal->memory_efficiency) c.eff.memory = cal->memory_efficiency->value;
    if (cal->launch_s_matrix) c.eff.launch_s = cal->launch_s_matrix->value;
    c.eff.source = "device calibration (" + hw_path + ")";
  }
  LinkLevel none;
  none.name = "none (one device)";
  none.group_size = 1;
  none.bw_unidir = 1e12;
  none.source = "a single device has no interconnect";
  c.links.push_back(none);
  return c;
}

Cluster load_cluster_or_device(const std::string& path) {
  toml::table root = TomlFields::parse_file(path);
  if (root.get("cluster") == nullptr && root.get("device") != nullptr) return cluster_from_device(path);
  return load_cluster(path);
}

void calibrate_from_kernels_bench(Cluster& c, const std::string& json_path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(json_path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(json_path, 0, std::string("not the JSON of trex kernels bench: ") + e.what());
  }
  try {
    double peak = j.at("context").at("peak_flops_fp32").get<double>();
    double triad = j.at("context").at("triad_bytes_per_s").get<double>();
    double gemm = 0, attn = 0;
    std::vector<double> mem;
    for (const auto& r : j.at("results")) {
      if (!r.value("valid", false)) continue;
      std::string k = r.at("kernel").get<std::string>();
      if (k == "gemm") gemm = r.at("gflop_per_s").get<double>() * 1e9;
      if (k == "sparse_attention.fwd") attn = r.at("gflop_per_s").get<double>() * 1e9;
      if (r.value("bound", "") == "memory") mem.push_back(r.at("gb_per_s").get<double>() * 1e9 / triad);
    }
    if (gemm <= 0 || peak <= 0) throw InputError(json_path, 0, "no valid gemm result to calibrate the matmul efficiency");
    c.eff.matmul = std::min(1.0, gemm / peak);
    if (attn > 0) c.eff.attention = std::min(1.0, attn / peak);
    if (!mem.empty()) {
      std::sort(mem.begin(), mem.end());
      c.eff.memory = std::clamp(mem[mem.size() / 2], 0.01, 1.0);
    }
    c.eff.source = "measured by trex kernels bench (" + json_path + ")";
  } catch (const nlohmann::json::exception& e) {
    throw InputError(json_path, 0, std::string("missing field: ") + e.what());
  }
}

void set_nodes(Cluster& c, long nodes) {
  if (nodes < 1) throw InputError::field("nodes", "must be at least 1");
  c.nodes = nodes;
  check_reach(c, c.file);
}

void check_reach(const Cluster& c, const std::string& path) {
  if (c.links.back().group_size < c.devices())
    throw InputError(path, 0, "link: the outermost level \"" + c.links.back().name + "\" joins " +
                                  std::to_string(c.links.back().group_size) + " devices but the cluster has " +
                                  std::to_string(c.devices()) + " (some devices could not reach each other)");
}

}  // namespace trex::plan
