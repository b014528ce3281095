// Independent products of one layer run side by side, each on one thread of the pool, instead of
// one after another on all of them.
//
// Why: a threaded sgemm forks and joins the pool twice per (NC, KC) block, so a layer's small
// products (v4-micro: the input and weight gradients of each projection, 2048 x 512 x 512 and
// smaller) are mostly hand-offs, and every join waits for the slower thread; on a loaded machine
// it waits for a descheduled one. In a v4-micro step traced at load 13 (session 9) the products
// run this way (the routed experts, moe.cc) took 1.2-1.3x their quiet time, the threaded ones
// (attn.wo_backward, moe.shared.bwd) 2.7-3.2x. One parallel region over whole products has one
// join, and each product runs the one-thread GEMM at full rate.
//
// Bits: sgemm's result does not depend on the thread count (each element is one FMA chain in
// fixed KC blocks), the tasks write disjoint outputs, and a task that chains products on one
// output (dx = a W1, then dx += b W3) keeps their order; so results are the sequential ones.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"

namespace trex::model {

// Runs every task once. With at least as many tasks as the default pool has threads (and more
// than one thread), the tasks go to the threads in list order, a thread taking the next task
// when it finishes one, so list the larger first; a GEMM inside a task runs on its own thread
// (a nested call on the pool is serial). With fewer tasks than threads they run one after
// another, each GEMM threaded as usual, so no thread is left idle by the split.
inline void side_by_side(const std::vector<std::function<void()>>& tasks) {
  core::ThreadPool& pool = core::default_thread_pool();
  if (pool.num_threads() < 2 || int64_t(tasks.size()) < int64_t(pool.num_threads())) {
    for (const auto& t : tasks) t();
    return;
  }
  core::TraceForward counts;  // the tasks' FLOPs and bytes go to the caller's open span
  pool.parallel_for(0, int64_t(tasks.size()), 1, [&](int64_t lo, int64_t hi) {
    core::TraceForward::Scope scope(counts);
    for (int64_t i = lo; i < hi; ++i) tasks[size_t(i)]();
  });
}

}  // namespace trex::model
