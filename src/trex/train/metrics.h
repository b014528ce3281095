// Per-step training metrics: one JSON line per step in RUN/metrics.jsonl (fields in
// docs/train.md), flushed as written so a killed run keeps every finished step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace trex::train {

struct StepMetrics {
  int64_t step = 0;
  double loss = 0;          // mean cross-entropy over the counted positions of the step
  double grad_norm = 0;     // global L2 norm before clipping
  double lr = 0;
  int64_t tokens = 0;       // positions processed (rows x seq x micro-batches)
  int64_t counted = 0;      // positions with a loss target
  double step_s = 0;        // wall time of the step
  double tokens_per_s = 0;
  double mfu = 0;           // 3 F_fwd tokens / (step_s peak); 0 when no peak is known
  double data_s = 0, fwd_bwd_s = 0, optimizer_s = 0;
  double cpu_s = 0;         // CPU time of the whole process (every thread) during the step
  int64_t optimizer_bytes = 0;  // optimizer state resident in memory
  int64_t rss_bytes = 0;        // resident set size of the process (kept large buffers included)
  bool skipped = false;         // non-finite loss or gradient: no update
  bool clipped = false;
  // The swap optimizer's I/O of this step (written only when it is the optimizer): time its
  // loader or storer was busy, the part of it the training thread waited for (exposed: all of
  // it when the swap step runs after the backward), the rest (hidden behind the forward and
  // backward); redone: the update made during the
  // backward was thrown away and the step redone after it (the current-norm clipping scale).
  // Under mpirun these are rank 0's (each rank swaps its own shard); swap_rank_io_s and
  // swap_rank_exposed_s give every rank's, in rank order (empty in one process).
  bool swap = false;
  double swap_io_s = 0, swap_exposed_s = 0, swap_hidden_s = 0;
  bool swap_redone = false;
  std::vector<double> swap_rank_io_s, swap_rank_exposed_s;
  std::string to_json() const;
};

// Resident set size of this process (from /proc/self/statm), 0 when unknown.
int64_t current_rss_bytes();

class MetricsLog {
 public:
  // Opens RUN/metrics.jsonl. keep_until >= 0: a resumed run first drops lines of steps after
  // keep_until (a killed run may have logged steps past its last checkpoint), rewriting the
  // file atomically; -1 starts a new file.
  MetricsLog(const std::string& path, int64_t keep_until);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const StepMetrics& m);

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace trex::train
