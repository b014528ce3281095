// A wall-clock limit on reading a model, so that `trex solve --time-limit S` is one budget for
// the whole command: glpsol's translation of a MathProg file and trex's own parsing of the LP
// or MPS text both stop when it is spent (an 80 MB LP, GLPK's huge.mod translated, took 78 s of
// wall clock to read at load 27). The readers look at the clock once every kStride steps
// (tokens or lines), which costs nothing measurable.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace trex::lp {

// The limit passed while the model was read (or translated): not an input error, the model
// may be fine; `trex solve` reports it as a time-limit stop without a solution.
class ReadTimeLimit : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ReadLimit {
 public:
  static constexpr uint32_t kStride = 1024;
  // limit_s <= 0: none.
  explicit ReadLimit(double limit_s = 0);
  bool unlimited() const { return !(limit_s_ > 0); }
  // Seconds left for a helper process (0 when unlimited, else at least 1 ms: 0 means none).
  double process_limit() const;
  // One step of a reader; throws ReadTimeLimit naming `file` once the limit has passed.
  void step(const std::string& file) {
    if (!unlimited() && ++steps_ % kStride == 0 && std::chrono::steady_clock::now() >= end_) fail(file);
  }
  [[noreturn]] void fail(const std::string& file) const;
  // "FILE: the time limit (S s) passed while the model was read; nothing was solved".
  static std::string stop_message(const std::string& file, double limit_s);

 private:
  double limit_s_;
  std::chrono::steady_clock::time_point end_;
  uint32_t steps_ = 0;
};

}  // namespace trex::lp
