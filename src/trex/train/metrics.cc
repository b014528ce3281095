#include "trex/train/metrics.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

// JSON has no NaN or infinity: a non-finite value (the guard's business) is written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::string StepMetrics::to_json() const {
  nlohmann::ordered_json j;
  j["step"] = step;
  j["loss"] = number(loss);
  j["grad_norm"] = number(grad_norm);
  j["lr"] = lr;
  j["tokens"] = tokens;
  j["counted"] = counted;
  j["step_s"] = step_s;
  j["tokens_per_s"] = tokens_per_s;
  j["mfu"] = mfu;
  j["data_s"] = data_s;
  j["fwd_bwd_s"] = fwd_bwd_s;
  j["optimizer_s"] = optimizer_s;
  j["cpu_s"] = cpu_s;
  j["optimizer_bytes"] = optimizer_bytes;
  j["rss_bytes"] = rss_bytes;
  j["skipped"] = skipped;
  j["clipped"] = clipped;
  if (swap) {
    j["swap_io_s"] = swap_io_s;
    j["swap_exposed_s"] = swap_exposed_s;
    j["swap_hidden_s"] = swap_hidden_s;
    j["swap_redone"] = swap_redone;
    if (!swap_rank_io_s.empty()) {
      j["swap_rank_io_s"] = swap_rank_io_s;
      j["swap_rank_exposed_s"] = swap_rank_exposed_s;
    }
  }
  return j.dump();
}

int64_t current_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * int64_t(sysconf(_SC_PAGESIZE));
}

MetricsLog::MetricsLog(const std::string& path, int64_t keep_until) {
  if (keep_until >= 0) {
    std::string kept;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() <= keep_until)
        kept += line + "\n";
    }
    write_file_atomic(path, kept);
  }
  f_ = std::fopen(path.c_str(), keep_until >= 0 ? "a" : "w");
  if (f_ == nullptr) throw InputError(path, 0, "cannot open for writing");
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const StepMetrics& m) {
  std::string line = m.to_json() + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace trex::train
