#include "trex/plan/report.h"

#include <algorithm>
#include <cstdio>

namespace trex::plan {

std::string bytes_text(double b) {
  char buf[32];
  if (b >= 1e12)
    std::snprintf(buf, sizeof buf, "%.2f TB", b / 1e12);
  else if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.0f MB", b / 1e6);
  return buf;
}

std::string strategy_text(const Strategy& s) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "TP%ld PP%ld%s DP%ld CP%ld EP%ld ETP%ld EDP%ld ZeRO%d recompute=%s swap=%s grouped-gemm=%s",
                s.tp, s.pp, s.vpp > 1 ? (" VPP" + std::to_string(s.vpp)).c_str() : "", s.dp, s.cp, s.ep, s.etp, s.edp,
                s.zero, to_string(s.recompute), s.swap_optimizer ? "on" : "off", s.grouped_gemm ? "yes" : "no");
  std::string out = buf;
  if (s.vpp > 1 && s.microbatch_group > 0) out += " microbatch-group=" + std::to_string(s.microbatch_group);
  if (s.recompute == Recompute::kFull && s.recompute_layers > 0)
    out += " recompute-layers=" + std::to_string(s.recompute_layers);
  if (s.ep > 1 && s.moe_overlap != MoeOverlap::kNone) out += std::string(" moe-overlap=") + to_string(s.moe_overlap);
  if (s.ep > 1 && s.moe_dispatcher != MoeDispatcher::kAllToAll) out += std::string(" dispatcher=") + to_string(s.moe_dispatcher);
  if (s.zero >= 3 && s.shard_group > 0) out += " shard-group=" + std::to_string(s.shard_group);
  if (!s.moe_cuda_graphs) out += " cuda-graphs=none";
  if (s.moe_token_drop != MoeTokenDrop::kDropless) out += std::string(" token-drop=") + to_string(s.moe_token_drop);
  if (s.stack.name != "neutral") out += " stack=" + s.stack.name;
  return out;
}

namespace {

std::string line(const char* fmt, double a, double b) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

void time_row(std::string& out, const char* name, double s, double step, const char* why) {
  if (s <= 0) return;
  char buf[200];
  std::snprintf(buf, sizeof buf, "  %-22s %9.3f s %6.1f%%  %s\n", name, s, 100 * s / step, why);
  out += buf;
}

void mem_row(std::string& out, const char* name, double b, double cap) {
  if (b <= 0) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %-22s %10s %6.1f%%\n", name, bytes_text(b).c_str(), 100 * b / cap);
  out += buf;
}

}  // namespace

std::string format_prediction(const model::ModelConfig& m, const Cluster& c, const Run& r, const Prediction& p) {
  std::string o;
  char buf[400];
  std::snprintf(buf, sizeof buf, "model:     %s (%s)\n", m.name.c_str(), m.file.c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "cluster:   %s, %ld x %s (%ld x %ld), peak %.4g TFLOPS and %s memory each\n",
                c.name.c_str(), c.devices(), c.device.device.name.c_str(), c.nodes, c.devices_per_node,
                c.peak_flops / 1e12, bytes_text(c.hbm_bytes).c_str());
  o += buf;
  std::snprintf(buf, sizeof buf, "run:       seq %ld, global batch %ld (%ld tokens), micro-batch %ld, %ld micro-batches per rank%s\n",
                r.seq_len, r.global_batch, p.tokens_per_step, r.micro_batch, p.micro_batches,
                r.train_mtp ? ", MTP trained" : "");
  o += buf;
  o += "strategy:  " + strategy_text(p.strategy) + "\n";
  std::snprintf(buf, sizeof buf, "factors:   matmul %.2f, attention %.2f, memory %.2f of the roofs, launch %.1f us (%s)\n",
                c.eff.matmul, c.eff.attention, c.eff.memory, 1e6 * c.eff.launch_s, c.eff.source.c_str());
  o += buf;
  const StackProfile& st = p.strategy.stack;
  if (st.name != "neutral") {
    std::snprintf(buf, sizeof buf, "stack:     %s: matmul x%.2f, attention x%.2f, memory x%.2f, launch x%.2f (%s)\n",
                  st.name.c_str(), st.matmul_scale, st.attention_scale, st.memory_scale, st.launch_scale, st.source.c_str());
    o += buf;
  }
  const MemoryBreakdown& mem = p.memory;
  std::snprintf(buf, sizeof buf, "\nmemory per device (pipeline rank %d): %s of %s -> %s\n", mem.pipeline_rank,
                bytes_text(mem.total()).c_str(), bytes_text(mem.capacity).c_str(),
                mem.fits ? "fits" : (mem.host_fits ? "DOES NOT FIT" : "DOES NOT FIT (host memory)"));
  o += buf;
  mem_row(o, "weights (bf16)", mem.weights, mem.capacity);
  mem_row(o, "gradients", mem.gradients, mem.capacity);
  mem_row(o, p.strategy.swap_optimizer ? "optimizer swap slots" : "optimizer state", mem.optimizer, mem.capacity);
  mem_row(o, "activations", mem.activations, mem.capacity);
  mem_row(o, r.logits_bytes == 2 ? "logits (bf16)" : "logits (fp32)", mem.logits, mem.capacity);
  mem_row(o, "comm buffers", mem.comm_buffers, mem.capacity);
  mem_row(o, c.reserved_source.empty() && mem.reserved > 0 ? "reserve (assumed)" : "runtime reserve", mem.reserved,
          mem.capacity);
  if (mem.reserved > 0)
    o += "  reserve: " +
         (c.reserved_source.empty() ? std::string("an assumption of the cluster file, no published figure (docs/plan.md)")
                                    : c.reserved_source) +
         "\n";
  if (mem.host_state > 0) {
    std::snprintf(buf, sizeof buf, "  host: swapped state %s of %s per device\n", bytes_text(mem.host_state).c_str(),
                  bytes_text(c.host_bytes_per_device).c_str());
    o += buf;
  }
  const TimeBreakdown& t = p.time;
  std::snprintf(buf, sizeof buf, "\nstep time %.3f s, %.0f tokens/s (%.1f per device)\n", t.step, p.tokens_per_s,
                p.tokens_per_s / double(c.devices()));
  o += buf;
  time_row(o, "compute", t.compute - t.recompute, t.step, "GEMMs, attention, vector kernels at their roofline");
  time_row(o, "recompute", t.recompute, t.step, "forward work repeated for activations not kept");
  time_row(o, "launch", t.launch, t.step, "kernels shorter than the launch cost");
  time_row(o, "TP comm (exposed)", t.tp_comm, t.step, "all-gather / reduce-scatter");
  time_row(o, "CP comm (exposed)", t.cp_comm, t.step, "K/V ring beyond the attention core");
  time_row(o, "EP comm (exposed)", t.ep_comm, t.step, "all-to-all dispatch and combine");
  time_row(o, "PP comm", t.pp_comm, t.step, "stage-to-stage sends");
  time_row(o, "pipeline bubble", t.bubble, t.step, "fill and drain");
  time_row(o, "DP comm (exposed)", t.dp_comm, t.step, "gradient reduction, parameter gather");
  time_row(o, p.strategy.swap_optimizer ? "swap optimizer" : "optimizer", t.optimizer, t.step,
           p.strategy.swap_optimizer ? "host link transfer, double-buffered" : "AdamW, memory-bound");
  time_row(o, "stragglers", t.straggler, t.step, "slowest of N devices at each step");
  time_row(o, "stack overhead", t.overhead, t.step, "per-step work of the stack not modelled");
  if (p.strategy.swap_optimizer) {
    o += line("  (swap: %.3f s overlapped vs %.3f s with no overlap)\n", p.swap_overlapped_s, p.swap_serial_s);
  }
  o += "\nMFU by FLOP convention:\n";
  for (const MfuFigure& f : p.mfu) {
    std::snprintf(buf, sizeof buf, "  %-13s %7.4g GFLOP/token  MFU %5.1f%%  (%s)\n", model::to_string(f.convention),
                  f.flops_per_token / 1e9, 100 * f.mfu, model::describe(f.convention));
    o += buf;
  }
  std::snprintf(buf, sizeof buf, "  executed (with recomputation): %.4g GFLOP/token\n", p.hardware_flops_per_token / 1e9);
  o += buf;
  return o;
}

nlohmann::ordered_json prediction_json(const model::ModelConfig& m, const Cluster& c, const Run& r, const Prediction& p) {
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["cluster"] = c.name;
  j["devices"] = c.devices();
  j["efficiency"] = {{"matmul", c.eff.matmul}, {"attention", c.eff.attention}, {"memory", c.eff.memory},
                     {"launch_s", c.eff.launch_s}, {"source", c.eff.source}};
  j["run"] = {{"seq_len", r.seq_len}, {"global_batch", r.global_batch}, {"micro_batch", r.micro_batch},
              {"train_mtp", r.train_mtp}};
  const Strategy& s = p.strategy;
  j["strategy"] = {{"tp", s.tp}, {"pp", s.pp}, {"vpp", s.vpp}, {"microbatch_group", s.vpp > 1 && s.microbatch_group == 0 ? s.pp : s.microbatch_group}, {"dp", s.dp}, {"cp", s.cp}, {"ep", s.ep},
                   {"etp", s.etp}, {"edp", s.edp}, {"zero", s.zero}, {"recompute", to_string(s.recompute)},
                   {"swap_optimizer", s.swap_optimizer}, {"a2a_overlap", s.a2a_overlap},
                   {"moe_overlap", to_string(s.moe_overlap)}, {"moe_dispatcher", to_string(s.moe_dispatcher)}, {"shard_group", s.shard_group},
                   {"stack", s.stack.name}, {"grouped_gemm", s.grouped_gemm},
                   {"cuda_graphs", s.moe_cuda_graphs ? "partial" : "none"},
                   {"moe_token_drop", to_string(s.moe_token_drop)}};
  j["micro_batches"] = p.micro_batches;
  j["tokens_per_step"] = p.tokens_per_step;
  const MemoryBreakdown& mem = p.memory;
  j["memory"] = {{"pipeline_rank", mem.pipeline_rank}, {"weights", mem.weights}, {"gradients", mem.gradients},
                 {"optimizer", mem.optimizer},         {"activations", mem.activations}, {"logits", mem.logits},
                 {"comm_buffers", mem.comm_buffers},   {"reserved", mem.reserved},   {"total", mem.total()},
                 {"capacity", mem.capacity},           {"host_state", mem.host_state}, {"fits", mem.fits},
                 // The reserve's source, or "assumption" where the cluster file gives none.
                 {"reserved_source", c.reserved_source.empty() ? std::string("assumption") : c.reserved_source}};
  const TimeBreakdown& t = p.time;
  j["time"] = {{"step", t.step},       {"compute", t.compute}, {"recompute", t.recompute}, {"launch", t.launch},
               {"tp_comm", t.tp_comm}, {"cp_comm", t.cp_comm}, {"ep_comm", t.ep_comm},     {"pp_comm", t.pp_comm},
               {"bubble", t.bubble},   {"dp_comm", t.dp_comm}, {"optimizer", t.optimizer},
               {"straggler", t.straggler}, {"overhead", t.overhead}};
  j["tokens_per_s"] = p.tokens_per_s;
  nlohmann::ordered_json mfu;
  for (const MfuFigure& f : p.mfu)
    mfu[model::to_string(f.convention)] = {{"flops_per_token", f.flops_per_token}, {"mfu", f.mfu}};
  j["mfu"] = mfu;
  j["executed_flops_per_token"] = p.hardware_flops_per_token;
  j["assumptions"] = model_assumptions();
  return j;
}

std::string breakdown_svg(const std::string& title, const std::vector<ChartBar>& bars) {
  struct Part {
    const char* name;
    const char* color;
    double TimeBreakdown::*field;
  };
  static const Part parts[] = {
      {"compute", "#4e79a7", &TimeBreakdown::compute},   {"launch", "#a0cbe8", &TimeBreakdown::launch},
      {"TP comm", "#f28e2b", &TimeBreakdown::tp_comm},    {"CP comm", "#ffbe7d", &TimeBreakdown::cp_comm},
      {"EP comm", "#e15759", &TimeBreakdown::ep_comm},    {"PP comm", "#ff9d9a", &TimeBreakdown::pp_comm},
      {"DP comm", "#b07aa1", &TimeBreakdown::dp_comm},    {"bubble", "#bab0ac", &TimeBreakdown::bubble},
      {"optimizer", "#59a14f", &TimeBreakdown::optimizer}, {"stragglers", "#edc948", &TimeBreakdown::straggler},
      {"overhead", "#9c755f", &TimeBreakdown::overhead},
  };
  double vmax = 0;
  for (const ChartBar& b : bars) vmax = std::max({vmax, b.time.step, b.reference_s});
  if (vmax <= 0) vmax = 1;
  const double left = 230, width = 560, row = 34, top = 50;
  double height = top + row * double(bars.size()) + 70;
  std::string o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                left + width + 160, height);
  o += buf;
  auto esc = [](const std::string& s) {
    std::string e;
    for (char ch : s) {
      if (ch == '&') e += "&amp;";
      else if (ch == '<') e += "&lt;";
      else if (ch == '>') e += "&gt;";
      else e += ch;
    }
    return e;
  };
  std::snprintf(buf, sizeof buf, "<text x=\"10\" y=\"22\" font-size=\"15\">%s</text>\n", esc(title).c_str());
  o += buf;
  for (size_t i = 0; i < bars.size(); ++i) {
    const ChartBar& b = bars[i];
    double y = top + row * double(i);
    std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n", left - 8, y + 16,
                  esc(b.label).c_str());
    o += buf;
    double x = left;
    for (const Part& p : parts) {
      double v = b.time.*(p.field);
      if (v <= 0) continue;
      double w = width * v / vmax;
      std::snprintf(buf, sizeof buf,
                    "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"22\" fill=\"%s\"><title>%s %.3f s</title></rect>\n", x,
                    y, w, p.color, p.name, v);
      o += buf;
      x += w;
    }
    std::snprintf(buf, sizeof buf, "<text x=\"%.2f\" y=\"%.0f\">%.2f s %s</text>\n", x + 6, y + 16, b.time.step,
                  esc(b.note).c_str());
    o += buf;
    if (b.reference_s > 0) {
      double rx = left + width * b.reference_s / vmax;
      std::snprintf(buf, sizeof buf,
                    "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"black\" stroke-width=\"2\" stroke-dasharray=\"3,2\"><title>reference %.3f s</title></line>\n",
                    rx, rx, y - 3, y + 25, b.reference_s);
      o += buf;
    }
  }
  double ly = top + row * double(bars.size()) + 20;
  double lx = 10;
  for (const Part& p : parts) {
    std::snprintf(buf, sizeof buf, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                  lx, ly, p.color, lx + 16, ly + 11, p.name);
    o += buf;
    lx += 95;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"10\" y=\"%.0f\" fill=\"#555\">dashed line: reported step time; seconds per step on the slowest device</text>\n", ly + 35);
  o += buf;
  o += "</svg>\n";
  return o;
}

std::string breakdown_chart_file(const std::string& path, const std::string& title, const std::vector<ChartBar>& bars) {
  std::string svg = breakdown_svg(title, bars);
  bool html = path.size() >= 5 && path.compare(path.size() - 5, 5, ".html") == 0;
  if (!html) return svg;
  auto esc = [](const std::string& s) {
    std::string e;
    for (char ch : s) e += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : std::string(1, ch);
    return e;
  };
  std::string o = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(title) +
                  "</title></head>\n<body style=\"font-family:sans-serif\">\n" + svg +
                  "<table border=\"1\" cellpadding=\"4\" style=\"border-collapse:collapse\">\n<tr><th>bar</th><th>step s</th>"
                  "<th>compute</th><th>launch</th><th>TP</th><th>CP</th><th>EP</th><th>PP</th><th>DP</th><th>bubble</th>"
                  "<th>optimizer</th><th>note</th></tr>\n";
  char buf[512];
  for (const ChartBar& b : bars) {
    const TimeBreakdown& t = b.time;
    std::snprintf(buf, sizeof buf,
                  "<td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td>"
                  "<td>%.3f</td><td>%.3f</td>",
                  t.step, t.compute, t.launch, t.tp_comm, t.cp_comm, t.ep_comm, t.pp_comm, t.dp_comm, t.bubble, t.optimizer);
    o += "<tr><td>" + esc(b.label) + "</td>" + buf + "<td>" + esc(b.note) + "</td></tr>\n";
  }
  o += "</table>\n</body></html>\n";
  return o;
}

}  // namespace trex::plan
