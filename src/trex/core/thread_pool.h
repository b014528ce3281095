// A fixed set of threads that run one parallel job at a time, and deterministic reductions.
//
// A pool of n threads is the caller plus n - 1 workers. run() hands every thread its index and
// returns when all are done; run_dynamic() runs a job on the caller and on whichever workers
// start it before the caller's part ends, and returns when those are done (a worker that wakes
// later never touches the job); parallel_for() splits a range into chunks that threads take in
// turn (through run_dynamic); parallel_reduce() computes per-chunk partial results and combines
// them in a fixed order. Chunks depend only on the range and the chunk size, never on the thread count or on
// timing, so a reduction gives bit-identical results with 1 thread and with 64.
//
// A job that throws: the first exception is rethrown by the calling thread once all threads
// have stopped; chunks not yet started are skipped. A job that calls back into the same pool
// (nested parallelism, also via a job of another pool) runs serially rather than deadlock. One
// job runs at a time: concurrent callers of the same pool are serialised.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trex::core {

class ThreadPool {
 public:
  // num_threads >= 1 (0 means all CPUs this process may run on). With pin, thread t is bound to
  // the t-th CPU of the process's affinity mask (modulo its size), for measurements that need a
  // thread to stay where its memory was first touched; the caller, thread 0, is pinned only
  // while run() executes (the serial path of a 1-thread pool pins nothing).
  explicit ThreadPool(int num_threads = 0, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // True on a thread while it runs a job of this pool, also inside other pools' jobs nested in
  // it (run() from there goes serial): for a job that needs all the pool's threads at once.
  bool running_here() const;

  // Calls fn(t) once for each t in [0, num_threads()), each on its own thread (t = 0 on the
  // caller), and returns when all calls have returned.
  void run(const std::function<void(int thread)>& fn);

  // For a job whose work any subset of the threads completes (threads that take chunks from a
  // shared counter until none is left): calls fn(0) on the caller and fn(t) on each worker t
  // that starts before fn(0) has returned, and returns when every call that started has
  // returned. A worker that wakes after fn(0) returned skips the job: the caller never waits
  // for a wake-up (under load a sleeping worker's may take longer than the whole job). fn(t)
  // runs at most once per thread; threads must not wait for one another inside fn.
  void run_dynamic(const std::function<void(int thread)>& fn);

  // Calls fn(lo, hi) on consecutive chunks [lo, hi) of [begin, end), each `grain` long (the
  // last may be shorter), so that every index is covered exactly once. REQUIRES: grain >= 1.
  void parallel_for(int64_t begin, int64_t end, int64_t grain,
                    const std::function<void(int64_t lo, int64_t hi)>& fn);

 private:
  void worker_loop(int thread);
  void pin_current_thread(int thread) const;
  // run() (every worker must take the job) or run_dynamic() (workers join while it is open).
  void run_job(const std::function<void(int)>& fn, bool every_worker);

  int num_threads_;
  bool pin_;
  std::vector<int> cpus_;  // the affinity mask, for pinning
  std::vector<std::thread> workers_;

  std::mutex run_mu_;  // serialises callers of run()
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  // Whether a worker that sees the current generation may still take its job (under mu_). A
  // worker takes the job only under mu_ while it is open, so once the caller has closed it
  // (also under mu_), no other worker can reach the job, which lives on the caller's stack.
  bool open_ = false;
  bool every_worker_ = true;  // the current job's kind (under mu_)
  // Workers the caller still waits for: run(), every worker (n - 1 at the start); run_dynamic(),
  // those that took the job (0 at the start, +1 as each joins under mu_). -1 as each leaves.
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

// The process-wide pool that kernels share (one pool, so kernels and BLAS never compete).
// Its size is TREX_THREADS when set to a positive integer, else all CPUs of the affinity mask.
ThreadPool& default_thread_pool();

// `pool` when given, else the process-wide default: how kernels take an optional pool.
inline ThreadPool& pool_or_default(ThreadPool* pool) { return pool ? *pool : default_thread_pool(); }

// The CPUs this process may run on (sched_getaffinity), ascending; never empty.
std::vector<int> allowed_cpus();

// Deterministic reduction over [begin, end): partial[c] = map(lo_c, hi_c) for the fixed chunks
// [begin + c*chunk, min(end, begin + (c+1)*chunk)), then a fixed pairwise tree of combine()
// over the partials in chunk order, then combine(init, tree). An empty range yields init.
// The result depends only on begin, end, chunk, map and combine: not on the thread count.
// REQUIRES: chunk >= 1.
template <class T, class Map, class Combine>
T parallel_reduce(ThreadPool& pool, int64_t begin, int64_t end, int64_t chunk, T init, Map map,
                  Combine combine) {
  if (end <= begin) return init;
  int64_t n_chunks = (end - begin + chunk - 1) / chunk;
  std::vector<T> partial(size_t(n_chunks), init);
  pool.parallel_for(0, n_chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t lo = begin + c * chunk;
      int64_t hi = end - lo < chunk ? end : lo + chunk;
      partial[size_t(c)] = map(lo, hi);
    }
  });
  // Pairwise: combine neighbours at distance 1, 2, 4, ... (the shape depends on n_chunks only).
  for (int64_t step = 1; step < n_chunks; step *= 2)
    for (int64_t c = 0; c + step < n_chunks; c += 2 * step)
      partial[size_t(c)] = combine(partial[size_t(c)], partial[size_t(c + step)]);
  return combine(init, partial[0]);
}

}  // namespace trex::core
