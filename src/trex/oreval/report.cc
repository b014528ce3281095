// Evaluation reports: JSONL, JSON, Markdown and a self-contained HTML page with SVG charts.
#include "trex/oreval/report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/atomic_files.h"
#include "trex/util/data_dir.h"

namespace trex::oreval {

namespace {

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
  return b;
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

const std::vector<std::string>& class_order() {
  static const std::vector<std::string> k = {"correct", "wrong-objective", "wrong-structure", "infeasible",
                                             "unbounded", "runtime-error", "unsupported-call",
                                             "unsupported-library", "syntax-error", "timeout", "no-code"};
  return k;
}

const char* class_colour(const std::string& c) {
  if (c == "correct") return "#2e7d32";
  if (c == "wrong-objective" || c == "wrong-structure") return "#f9a825";
  if (c == "infeasible") return "#8d6e63";
  if (c == "unbounded") return "#5d4037";
  if (c == "runtime-error") return "#c62828";
  if (c == "syntax-error") return "#6a1b9a";
  if (c == "timeout") return "#1565c0";
  return "#9e9e9e";
}

nlohmann::ordered_json item_json(const std::string& bench, const ItemResult& r, const std::string& mode) {
  nlohmann::ordered_json j;
  j["benchmark"] = bench;
  j["id"] = r.id;
  j["sample"] = r.sample;
  j["class"] = to_string(r.error);
  j["status"] = r.status;
  j["objective"] = r.objective ? nlohmann::ordered_json(*r.objective) : nlohmann::ordered_json(nullptr);
  j["answer_kind"] = to_string(r.answer.kind);
  j["answer"] = r.answer.kind == AnswerKind::kNumber ? nlohmann::ordered_json(r.answer.value) : nlohmann::ordered_json(nullptr);
  j["mode"] = mode;
  j["code_kind"] = to_string(r.code_kind);
  j["code"] = r.code;
  j["message"] = r.message;
  j["seconds"] = r.seconds;
  return j;
}

}  // namespace

BenchmarkSummary summarize(const Benchmark& bench, const std::vector<ItemResult>& results) {
  BenchmarkSummary s;
  s.name = bench.name;
  s.in_overall = bench.in_overall;
  s.items = int(bench.items.size());
  std::map<std::string, std::pair<int, int>> per_item;  // id -> (correct, samples)
  for (const ItemResult& r : results) {
    auto& p = per_item[r.id];
    p.second++;
    if (r.error == ErrorClass::kCorrect) p.first++;
    s.classes[to_string(r.error)]++;
    s.samples = std::max(s.samples, p.second);
  }
  if (s.items == 0) return s;
  double pass = 0, any = 0;
  for (const Item& it : bench.items) {
    auto p = per_item.find(it.id);
    if (p == per_item.end() || p->second.second == 0) continue;
    pass += double(p->second.first) / p->second.second;
    any += p->second.first > 0 ? 1 : 0;
  }
  s.pass_at_1 = pass / s.items;
  s.acc_at_k = any / s.items;
  return s;
}

double overall_accuracy(const std::vector<BenchmarkSummary>& summaries) {
  double sum = 0;
  int n = 0;
  for (const auto& s : summaries)
    if (s.in_overall) {
      sum += s.pass_at_1;
      ++n;
    }
  return n ? sum / n : -1;
}

std::string markdown_summary(const std::vector<BenchmarkSummary>& summaries, const RunInfo& info) {
  std::string md = "# trex eval\n\n";
  md += "- mode: `" + info.mode + "`\n- sandbox: " + info.isolation + "\n";
  if (!info.program_folders.empty()) md += "- program folders: " + info.program_folders + "\n";
  md += "- completions: `" + info.completions + "`\n";
  char b[64];
  std::snprintf(b, sizeof b, "%.1f s", info.seconds);
  md += std::string("- wall time: ") + b + "\n- trex " + version() + "\n\n";
  md += "| benchmark | items | k | Pass@1 | acc@k |";
  for (const auto& c : class_order()) md += " " + c + " |";
  md += "\n|---|---:|---:|---:|---:|";
  for (size_t i = 0; i < class_order().size(); ++i) md += "---:|";
  md += "\n";
  for (const auto& s : summaries) {
    md += "| " + s.name + (s.in_overall ? " *" : "") + " | " + std::to_string(s.items) + " | " + std::to_string(s.samples) +
          " | " + pct(s.pass_at_1) + " | " + pct(s.acc_at_k) + " |";
    for (const auto& c : class_order()) {
      auto it = s.classes.find(c);
      md += " " + std::to_string(it == s.classes.end() ? 0 : it->second) + " |";
    }
    md += "\n";
  }
  double overall = overall_accuracy(summaries);
  int n = 0;
  for (const auto& s : summaries) n += s.in_overall;
  if (overall >= 0)
    md += "\nOverall accuracy (mean Pass@1 of the " + std::to_string(n) + " report benchmark" + (n == 1 ? "" : "s") +
          " marked *): **" + pct(overall) + "**" + (n < 4 ? " (the report averages four: nl4opt, optibench, b4o-feasible, b4o-orgeval)" : "") + "\n";
  return md;
}

std::string unscored_items_note(const std::vector<std::vector<ItemResult>>& results) {
  size_t all = 0, unscored = 0;
  std::vector<std::pair<std::string, size_t>> reasons;  // in the order first met
  for (const auto& bench : results)
    for (const ItemResult& r : bench) {
      ++all;
      if (r.status != "error") continue;
      ++unscored;
      std::string reason = r.message.empty() ? "no reason given" : r.message;
      std::replace(reason.begin(), reason.end(), '\n', ' ');  // one line
      auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& e) { return e.first == reason; });
      if (it == reasons.end()) reasons.emplace_back(reason, 1);
      else ++it->second;
    }
  if (unscored == 0) return "";
  auto most = std::max_element(reasons.begin(), reasons.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string line = "trex eval: " + std::to_string(unscored) + " of " + std::to_string(all) +
                     " items could not be scored (status \"error\" in results.jsonl): " + most->first;
  if (reasons.size() > 1)
    line += " (" + std::to_string(most->second) + " of them; " + std::to_string(reasons.size() - 1) + " other reason" +
            (reasons.size() == 2 ? "" : "s") + ")";
  return line + "\n";
}

void write_reports(const std::string& dir, const std::vector<const Benchmark*>& benches,
                   const std::vector<std::vector<ItemResult>>& results,
                   const std::vector<BenchmarkSummary>& summaries, const RunInfo& info) {
  std::filesystem::create_directories(dir);
  std::string jsonl;
  for (size_t b = 0; b < benches.size(); ++b)
    for (const ItemResult& r : results[b])
      jsonl += item_json(benches[b]->name, r, info.mode).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // The four files are written together at the end (write_files_atomic): each whole or not at
  // all, each on disk before its rename, with one journal commit for all instead of one each.
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back(dir + "/results.jsonl", std::move(jsonl));

  nlohmann::ordered_json sj;
  sj["schema_version"] = 1;
  sj["trex_version"] = version();
  sj["mode"] = info.mode;
  sj["sandbox"] = info.isolation;
  if (!info.program_folders.empty()) sj["program_folders"] = info.program_folders;
  sj["completions"] = info.completions;
  sj["seconds"] = info.seconds;
  for (const auto& s : summaries) {
    nlohmann::ordered_json e;
    e["name"] = s.name;
    e["in_overall"] = s.in_overall;
    e["items"] = s.items;
    e["samples"] = s.samples;
    e["pass_at_1"] = s.pass_at_1;
    e["acc_at_k"] = s.acc_at_k;
    e["classes"] = s.classes;
    sj["benchmarks"].push_back(e);
  }
  double overall = overall_accuracy(summaries);
  sj["overall_accuracy"] = overall >= 0 ? nlohmann::ordered_json(overall) : nlohmann::ordered_json(nullptr);
  files.emplace_back(dir + "/summary.json", sj.dump(2) + "\n");
  files.emplace_back(dir + "/summary.md", markdown_summary(summaries, info));

  // HTML: a Pass@1 / acc@k bar chart and a stacked error-class bar per benchmark, inline SVG.
  std::string h = "<!doctype html><html><head><meta charset=\"utf-8\"><title>trex eval</title><style>"
                  "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
                  "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th:first-child,td:first-child{text-align:left}"
                  "</style></head><body><h1>trex eval</h1>";
  h += "<p>mode <b>" + html_escape(info.mode) + "</b>; sandbox " + html_escape(info.isolation) +
       (info.program_folders.empty() ? "" : "; program folders " + html_escape(info.program_folders)) + "; completions " +
       html_escape(info.completions) + "</p>";
  if (overall >= 0) h += "<p>Overall accuracy: <b>" + pct(overall) + "</b></p>";
  const int row_h = 28, label_w = 170, bar_w = 500;
  int height = int(summaries.size()) * row_h + 30;
  h += "<h2>Pass@1 and acc@k</h2><svg width=\"" + std::to_string(label_w + bar_w + 120) + "\" height=\"" + std::to_string(height) + "\">";
  for (size_t i = 0; i < summaries.size(); ++i) {
    const auto& s = summaries[i];
    int y = int(i) * row_h + 10;
    h += "<text x=\"0\" y=\"" + std::to_string(y + 14) + "\" font-size=\"13\">" + html_escape(s.name) + "</text>";
    h += "<rect x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(int(bar_w * s.acc_at_k)) +
         "\" height=\"18\" fill=\"#a5d6a7\"/>";
    h += "<rect x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(y + 4) + "\" width=\"" + std::to_string(int(bar_w * s.pass_at_1)) +
         "\" height=\"10\" fill=\"#2e7d32\"/>";
    h += "<text x=\"" + std::to_string(label_w + bar_w + 8) + "\" y=\"" + std::to_string(y + 14) + "\" font-size=\"13\">" + pct(s.pass_at_1) +
         " / " + pct(s.acc_at_k) + "</text>";
  }
  h += "</svg><h2>Error classes</h2><svg width=\"" + std::to_string(label_w + bar_w + 20) + "\" height=\"" + std::to_string(height + 30) + "\">";
  for (size_t i = 0; i < summaries.size(); ++i) {
    const auto& s = summaries[i];
    int y = int(i) * row_h + 10, total = 0;
    for (const auto& [c, n] : s.classes) total += n;
    h += "<text x=\"0\" y=\"" + std::to_string(y + 14) + "\" font-size=\"13\">" + html_escape(s.name) + "</text>";
    double x = label_w;
    for (const auto& c : class_order()) {
      auto it = s.classes.find(c);
      if (it == s.classes.end() || total == 0) continue;
      double w = double(bar_w) * it->second / total;
      char rect[256];
      std::snprintf(rect, sizeof rect, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"18\" fill=\"%s\"><title>%s: %d</title></rect>", x, y, w,
                    class_colour(c), c.c_str(), it->second);
      h += rect;
      x += w;
    }
  }
  int ly = int(summaries.size()) * row_h + 20, lx = 0;
  for (const auto& c : class_order()) {
    h += "<rect x=\"" + std::to_string(lx) + "\" y=\"" + std::to_string(ly) + "\" width=\"12\" height=\"12\" fill=\"" + class_colour(c) + "\"/>";
    h += "<text x=\"" + std::to_string(lx + 16) + "\" y=\"" + std::to_string(ly + 11) + "\" font-size=\"12\">" + c + "</text>";
    lx += 16 + int(c.size()) * 7 + 12;
  }
  h += "</svg><h2>Summary</h2><table><tr><th>benchmark</th><th>items</th><th>k</th><th>Pass@1</th><th>acc@k</th>";
  for (const auto& c : class_order()) h += "<th>" + c + "</th>";
  h += "</tr>";
  for (const auto& s : summaries) {
    h += "<tr><td>" + html_escape(s.name) + "</td><td>" + std::to_string(s.items) + "</td><td>" + std::to_string(s.samples) + "</td><td>" +
         pct(s.pass_at_1) + "</td><td>" + pct(s.acc_at_k) + "</td>";
    for (const auto& c : class_order()) {
      auto it = s.classes.find(c);
      h += "<td>" + std::to_string(it == s.classes.end() ? 0 : it->second) + "</td>";
    }
    h += "</tr>";
  }
  h += "</table><h2>Items not correct</h2><table><tr><th>benchmark</th><th>id</th><th>class</th><th>message</th></tr>";
  for (size_t b = 0; b < benches.size(); ++b)
    for (const ItemResult& r : results[b])
      if (r.error != ErrorClass::kCorrect)
        h += "<tr><td>" + html_escape(benches[b]->name) + "</td><td>" + html_escape(r.id) + "</td><td>" + to_string(r.error) +
             "</td><td style=\"text-align:left\">" + html_escape(r.message.substr(0, 200)) + "</td></tr>";
  h += "</table></body></html>\n";
  files.emplace_back(dir + "/report.html", std::move(h));
  write_files_atomic(files);
}

}  // namespace trex::oreval
