// Activations a pipeline rank holds at once: the peak of its model chunks in flight under
// Megatron-Core's 1F1B schedules (docs/plan.md, "Memory").
#pragma once

#include <algorithm>
#include <vector>

namespace trex::plan {

// Warm-up forward passes (model chunks) of pipeline rank r of pp before its first backward,
// as megatron/core/pipeline_parallel/schedules.py counts them: without interleaving pp - r - 1
// micro-batches; interleaved, (pp - r - 1) x 2 + (vpp - 1) x N chunks, N the micro-batches
// per group of one virtual stage (microbatch_group_size_per_vp_stage; `group` 0 = pp, the
// default). Megatron-Core admits pp <= N <= m only (strategy.cc refuses the rest), so N = pp
// keeps the fewest chunks. Capped at all m x vpp chunks (then the rank runs every forward
// before any backward).
inline long warmup_chunks(long m, long pp, long vpp, long r, long group = 0) {
  const long total = m * std::max<long>(1, vpp);
  const long n = group > 0 ? group : pp;
  const long warm = vpp > 1 ? (pp - r - 1) * 2 + (vpp - 1) * n : pp - r - 1;
  return std::min(total, std::max<long>(0, warm));
}

// Peak bytes of kept activations on rank r: after the warm-up each 1F1B step runs one forward
// and then one backward, so at most warm-up + 1 chunks are alive at once. `chunk_bytes[v]` is
// what one micro-batch leaves for the backward in the rank's v-th chunk (chunks differ where a
// layout gives one the embedding or the head alone). Forward order is Megatron's schedule
// table: groups of N micro-batches (`group`, 0 = pp), within a group chunk 0 for each of them,
// then chunk 1, ...; the backward runs the same table with the chunks reversed. Where the
// chunks hold the same bytes the peak is min(warm-up + 1, m x vpp) chunks; otherwise the
// schedule is walked and the largest sum over the alive chunks taken.
inline double peak_in_flight_bytes(long m, long pp, long r, const std::vector<double>& chunk_bytes, long group = 0) {
  const long vpp = long(chunk_bytes.size());
  if (m <= 0 || vpp <= 0) return 0;
  const long total = m * vpp;
  const long n = group > 0 ? group : pp;
  const long warm = warmup_chunks(m, pp, vpp, r, n);
  const long alive_max = std::min(total, warm + 1);
  bool equal = true;
  for (double x : chunk_bytes) equal = equal && x == chunk_bytes[0];
  if (equal) return double(alive_max) * chunk_bytes[0];

  // The chunk of the k-th forward in the schedule table (groups of N micro-batches; the last
  // group holds what is left).
  std::vector<long> chunk_of(static_cast<size_t>(total));
  long k = 0;
  for (long first = 0; first < m; first += n) {
    const long in_group = std::min(n, m - first);
    for (long v = 0; v < vpp; ++v)
      for (long i = 0; i < in_group; ++i) chunk_of[size_t(k++)] = v;
  }
  double alive = 0;
  for (long f = 0; f < warm; ++f) alive += chunk_bytes[size_t(chunk_of[size_t(f)])];
  double peak = alive;
  for (long i = 0; warm + i < total; ++i) {
    alive += chunk_bytes[size_t(chunk_of[size_t(warm + i)])];  // the step's forward
    peak = std::max(peak, alive);
    alive -= chunk_bytes[size_t(vpp - 1 - chunk_of[size_t(i)])];  // then its backward
  }
  return peak;
}

}  // namespace trex::plan
