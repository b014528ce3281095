// Ascend msprof op_summary CSV (see trace_reader.h): one row per device task.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "trex/profile/timeline.h"
#include "trex/profile/trace_reader.h"
#include "trex/util/csv.h"
#include "trex/util/error.h"

namespace trex::profile {
namespace {

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// A number, or NaN for msprof's "N/A" and empty cells; anything else is an error.
double cell_number(const std::string& raw, const std::string& path, long line, const std::string& column) {
  std::string s = trimmed(raw);
  if (s.empty() || s == "N/A" || s == "NA" || s == "-") return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0')
    throw InputError(path, line, column + ": not a number: \"" + s + "\"");
  return v;
}

bool is_ratio_column(const std::string& name) {
  return (name.rfind("aic_", 0) == 0 || name.rfind("aiv_", 0) == 0) && name.size() > 6 &&
         name.compare(name.size() - 6, 6, "_ratio") == 0;
}

}  // namespace

KernelTrace read_msprof_op_summary(const std::string& text, const std::string& path) {
  std::vector<CsvRecord> rows = parse_csv(text, path);
  if (rows.empty()) throw InputError(path, 0, "empty CSV");
  std::vector<std::string> header;
  for (const std::string& h : rows[0].fields) header.push_back(trimmed(h));
  auto column = [&](const char* name) -> int {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : int(it - header.begin());
  };
  const int c_name = column("Op Name"), c_dur = column("Task Duration(us)");
  if (c_name < 0 || c_dur < 0)
    throw InputError(path, 1, "msprof op_summary header needs \"Op Name\" and \"Task Duration(us)\"");
  const int c_type = column("OP Type"), c_task = column("Task Type"), c_start = column("Task Start Time(us)"),
            c_wait = column("Task Wait Time(us)"), c_device = column("Device_id");
  std::vector<std::pair<int, std::string>> ratio_columns;
  for (size_t k = 0; k < header.size(); ++k)
    if (is_ratio_column(header[k])) ratio_columns.push_back({int(k), header[k]});

  KernelTrace t;
  t.path = path;
  t.format = "msprof";
  double wait_total = 0;
  bool all_started = c_start >= 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvRecord& row = rows[r];
    if (row.fields.size() != header.size())
      throw InputError(path, row.line,
                       "expected " + std::to_string(header.size()) + " fields, found " +
                           std::to_string(row.fields.size()) + " (truncated or malformed row)");
    KernelRecord k;
    k.name = trimmed(row.fields[size_t(c_name)]);
    if (c_type >= 0) k.op_type = trimmed(row.fields[size_t(c_type)]);
    if (c_task >= 0) k.trace_kind = trimmed(row.fields[size_t(c_task)]);
    double dur = cell_number(row.fields[size_t(c_dur)], path, row.line, "Task Duration(us)");
    if (!(dur >= 0)) throw InputError(path, row.line, "Task Duration(us): missing or negative");
    k.dur_us = dur;
    if (c_start >= 0) {
      double s = cell_number(row.fields[size_t(c_start)], path, row.line, "Task Start Time(us)");
      if (s == s) k.start_us = s;
      else all_started = false;
    }
    if (c_wait >= 0) {
      double w = cell_number(row.fields[size_t(c_wait)], path, row.line, "Task Wait Time(us)");
      if (w > 0) wait_total += w;
    }
    if (c_device >= 0 && t.rank < 0) {
      double d = cell_number(row.fields[size_t(c_device)], path, row.line, "Device_id");
      if (d == d) t.rank = int(d);
    }
    for (const auto& [col, name] : ratio_columns) {
      double v = cell_number(row.fields[size_t(col)], path, row.line, name);
      if (v == v) k.pipe_ratios[name] = v;
    }
    t.kernels.push_back(std::move(k));
  }
  if (t.kernels.empty()) throw InputError(path, 0, "an op_summary with a header and no rows: nothing to analyze");

  double total = 0;
  for (const KernelRecord& k : t.kernels) total += k.dur_us;
  if (all_started) {
    std::vector<Interval> iv;
    for (const KernelRecord& k : t.kernels) iv.push_back({k.start_us, k.start_us + k.dur_us});
    t.window_begin_us = iv.front().first;
    t.window_end_us = iv.front().second;
    for (const Interval& i : iv) {
      t.window_begin_us = std::min(t.window_begin_us, i.first);
      t.window_end_us = std::max(t.window_end_us, i.second);
    }
    t.window_us = t.window_end_us - t.window_begin_us;
    t.busy_us = covered_us(iv, {{t.window_begin_us, t.window_end_us}});
  } else {
    // Without start times the device timeline is busy time plus the waits between tasks.
    t.busy_us = total;
    t.window_us = total + wait_total;
    t.window_end_us = t.window_us;
    t.notes.push_back("no Task Start Time(us): idle time is the sum of Task Wait Time(us)");
  }
  return t;
}

}  // namespace trex::profile
