#include "trex/lp/read_limit.h"

#include <algorithm>
#include <cstdio>

namespace trex::lp {

ReadLimit::ReadLimit(double limit_s)
    : limit_s_(limit_s),
      end_(std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(limit_s > 0 ? limit_s : 0))) {}

double ReadLimit::process_limit() const {
  if (unlimited()) return 0;
  double left = std::chrono::duration<double>(end_ - std::chrono::steady_clock::now()).count();
  return std::max(left, 1e-3);
}

std::string ReadLimit::stop_message(const std::string& file, double limit_s) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3g", limit_s);
  return file + ": the time limit (" + seconds + " s) passed while the model was read; nothing was solved";
}

void ReadLimit::fail(const std::string& file) const { throw ReadTimeLimit(stop_message(file, limit_s_)); }

}  // namespace trex::lp
