#include "trex/util/progress.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace trex {

namespace {

ProgressBar::Mode resolve(ProgressBar::Mode mode, FILE* out) {
  if (mode != ProgressBar::Mode::kAuto) return mode;
  if (const char* env = std::getenv("TREX_PROGRESS")) {
    if (std::strcmp(env, "off") == 0) return ProgressBar::Mode::kOff;
    if (std::strcmp(env, "plain") == 0) return ProgressBar::Mode::kPlain;
  }
  return isatty(fileno(out)) ? ProgressBar::Mode::kTerminal : ProgressBar::Mode::kPlain;
}

}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total, Mode mode, FILE* out,
                         double plain_interval_s)
    : label_(std::move(label)),
      total_(total < 0 ? 0 : total),
      mode_(resolve(mode, out)),
      out_(out),
      plain_interval_s_(plain_interval_s),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

int64_t ProgressBar::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void ProgressBar::advance(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  done_ += n;
  if (mode_ == Mode::kOff) return;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_draw_).count();
  // A terminal redraws ten times a second at most; a log gets a line per interval.
  double interval = mode_ == Mode::kTerminal ? 0.1 : plain_interval_s_;
  if (since >= interval) {
    last_draw_ = now;
    draw_locked(false);
  }
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (mode_ != Mode::kOff) draw_locked(true);
}

void ProgressBar::draw_locked(bool final_line) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double frac = total_ > 0 ? double(done_) / double(total_) : 1.0;
  if (frac > 1) frac = 1;
  if (mode_ == Mode::kTerminal) {
    constexpr int kWidth = 30;
    int filled = int(frac * kWidth + 0.5);
    std::string bar(size_t(filled), '#');
    bar.append(size_t(kWidth - filled), '.');
    std::fprintf(out_, "\r%s [%s] %lld/%lld %3.0f%% %.1fs%s", label_.c_str(), bar.c_str(),
                 (long long)done_, (long long)total_, 100 * frac, elapsed,
                 final_line ? "\n" : "");
  } else {
    std::fprintf(out_, "%s: %lld/%lld (%.0f%%) %.1fs%s\n", label_.c_str(), (long long)done_,
                 (long long)total_, 100 * frac, elapsed, final_line ? " done" : "");
  }
  std::fflush(out_);
}

}  // namespace trex
