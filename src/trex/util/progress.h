// The one progress reporter every subcommand uses.
//
// On a terminal it redraws a bar in place ("\r"); elsewhere (a pipe, a CI log) it prints a
// plain line at most every `plain_interval_s` seconds and a last line when finished, so logs
// stay short. advance() is safe to call from many threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace trex {

class ProgressBar {
 public:
  enum class Mode { kAuto, kTerminal, kPlain, kOff };

  // kAuto picks kTerminal when `out` is a terminal, else kPlain; TREX_PROGRESS=off|plain
  // in the environment overrides kAuto.
  ProgressBar(std::string label, int64_t total, Mode mode = Mode::kAuto, FILE* out = stderr,
              double plain_interval_s = 5.0);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(int64_t n = 1);
  // Prints the final state once; later calls do nothing.
  void finish();

  int64_t done() const;
  Mode mode() const { return mode_; }

 private:
  void draw_locked(bool final_line);

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  Mode mode_;
  FILE* out_;
  double plain_interval_s_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  mutable std::mutex mu_;
};

}  // namespace trex
