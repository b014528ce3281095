#include "trex/profile/report.h"

namespace trex::profile {

nlohmann::ordered_json anatomy_json(const Anatomy& a) {
  using json = nlohmann::ordered_json;
  json j;
  j["format"] = "trex.profile.anatomy";
  j["version"] = 1;
  j["traces"] = a.traces;
  j["notes"] = a.notes;
  j["steps"] = a.steps;
  j["launches"] = a.launches;
  j["kernel_us"] = a.kernel_us;
  j["window_us"] = a.window_us;
  j["busy_us"] = a.busy_us;
  j["idle_us"] = a.idle_us;
  if (a.roofline)
    j["roofline"] = {{"device", a.roofline->device},         {"peak_flops", a.roofline->peak_flops},
                     {"peak", a.roofline->peak_name},        {"bytes_per_s", a.roofline->bytes_per_s},
                     {"bandwidth", a.roofline->bandwidth_name}, {"ridge_flop_per_byte", a.roofline->ridge()}};
  else
    j["roofline"] = nullptr;
  json cats = json::object();
  for (int c = 0; c < kKernelCategories; ++c) cats[to_string(KernelCategory(c))] = a.category_us[c];
  cats["idle"] = a.idle_us;
  j["category_us"] = cats;
  j["heavy_head"] = {{"cover", a.head_cover}, {"kernels", a.head_kernels}, {"share", a.head_share}};
  j["fragmentation"] = {{"tail_us", a.tail_us},
                        {"non_matmul_launches", a.non_matmul_launches},
                        {"non_matmul_launch_share", a.non_matmul_launch_share},
                        {"non_matmul_time_share", a.non_matmul_time_share},
                        {"short_launches", a.short_launches},
                        {"short_launch_share", a.short_launch_share},
                        {"short_time_share", a.short_time_share}};
  j["pipe_ratios"] = a.pipe_ratios;
  j["movement_over_vector"] = a.movement_over_vector;
  json ks = json::array();
  for (const KernelSummary& k : a.kernels) {
    json o;
    o["name"] = k.name;
    o["category"] = to_string(k.category);
    o["launches"] = k.launches;
    o["total_us"] = k.total_us;
    o["share"] = k.share;
    o["launch_share"] = k.launch_share;
    o["median_us"] = k.median_us;
    o["short_launches"] = k.short_launches;
    o["flops"] = k.flops;
    o["bytes"] = k.bytes;
    o["pipe_ratios"] = k.pipe_ratios;
    o["regime"] = k.regime;
    o["regime_basis"] = k.regime_basis;
    if (k.regime_basis.rfind("roofline", 0) == 0) {
      if (k.bytes > 0) o["intensity_flop_per_byte"] = k.intensity;
      o["roof_fraction"] = k.roof_fraction;
    }
    o["heavy_head"] = k.heavy_head;
    o["route"] = k.route;
    ks.push_back(std::move(o));
  }
  j["kernels"] = std::move(ks);
  return j;
}

}  // namespace trex::profile
