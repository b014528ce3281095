#include "trex/core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace trex::core {

namespace {

// The jobs this thread is running, innermost first, one scope per job on its stack: a job of
// pool P that runs a job of pool D is running both, and a run() on either from there goes serial
// (with only the innermost pool remembered, P.run() inside D's job would wait for P's own job).
struct RunningScope {
  const ThreadPool* pool;
  const RunningScope* outer;
  explicit RunningScope(const ThreadPool* p);
  ~RunningScope();
};

thread_local const RunningScope* tls_running = nullptr;

RunningScope::RunningScope(const ThreadPool* p) : pool(p), outer(tls_running) {
  tls_running = this;
}
RunningScope::~RunningScope() { tls_running = outer; }

bool running_job_of(const ThreadPool* pool) {
  for (const RunningScope* s = tls_running; s; s = s->outer)
    if (s->pool == pool) return true;
  return false;
}

// Spin budget of a wait before it sleeps, from TREX_POOL_SPIN_US (read once; default 200 µs).
// Any other value than an integer in 0..1000000 is ignored (the default holds), as a bad
// TREX_THREADS is: documented so in docs/hw.md.
// A futex wake-up of a sleeping worker took ~0.4 ms on average on the shared 2-core machine
// (session 10, v4-micro step: ~1800 parallel jobs a step), so the caller and the workers poll
// for a while before they sleep. 0 never spins.
int64_t spin_budget_ns() {
  static const int64_t ns = [] {
    const char* env = std::getenv("TREX_POOL_SPIN_US");
    if (env != nullptr) {
      char* end = nullptr;
      long us = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && us >= 0 && us <= 1000000) return int64_t(us) * 1000;
    }
    return int64_t(200) * 1000;
  }();
  return ns;
}

// No spinning when the pool has more threads than CPUs: a spinning thread would hold the CPU
// another one of the pool needs.
int64_t spin_ns_for(int num_threads, size_t cpus) {
  return size_t(num_threads) <= cpus ? spin_budget_ns() : 0;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls done() until it holds or budget_ns have passed; true when done() was seen. Polling
// pays only while the thread keeps its CPU: when the clock shows a gap between two reads (the
// thread was preempted: the machine is busy), the wait gives up and sleeps, and this thread's
// next 256 waits sleep at once. A thread that wakes from a futex gets the scheduler's wake-up
// preference; one that polled through its time slice does not (a niced 2-thread test of
// back-to-back jobs at load 15 ran 6x slower with plain polling, 14x with sched_yield polling).
thread_local int tls_sleep_only = 0;

template <class Done>
bool spin_until(int64_t budget_ns, Done done) {
  if (budget_ns <= 0) return false;
  if (tls_sleep_only > 0) {
    --tls_sleep_only;
    return false;
  }
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now();
  const auto deadline = last + std::chrono::nanoseconds(budget_ns);
  for (;;) {  // the clock is read every 64 polls (a pause is tens of cycles, a clock read too)
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    const auto now = Clock::now();
    if (now - last > std::chrono::microseconds(50)) {
      tls_sleep_only = 256;
      return done();
    }
    if (now >= deadline) return done();
    last = now;
  }
}

}  // namespace

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty()) {
    unsigned n = std::thread::hardware_concurrency();
    for (unsigned c = 0; c < (n == 0 ? 1 : n); ++c) cpus.push_back(int(c));
  }
  return cpus;
}

ThreadPool::ThreadPool(int num_threads, bool pin) : pin_(pin), cpus_(allowed_cpus()) {
  num_threads_ = num_threads > 0 ? num_threads : int(cpus_.size());
  workers_.reserve(size_t(num_threads_ - 1));
  for (int t = 1; t < num_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    std::atomic_ref<uint64_t>(generation_).fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::pin_current_thread(int thread) const {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus_[size_t(thread) % cpus_.size()], &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort
}

// The waits spin before they sleep (see spin_budget_ns): generation_ and pending_ are read and
// changed through std::atomic_ref, so a spinning thread sees a job start or end without mu_.
void ThreadPool::worker_loop(int thread) {
  if (pin_) pin_current_thread(thread);
  const int64_t spin_ns = spin_ns_for(num_threads_, cpus_.size());
  std::atomic_ref<uint64_t> generation(generation_);
  std::atomic_ref<int> pending(pending_);
  uint64_t seen = 0;
  for (;;) {
    // A new generation is published under mu_ after job_ (or stop_) is set, so once it is seen
    // (acquire) the job is readable. A worker that did not see it while spinning waits on
    // start_cv_ under mu_, so run()'s notify (after its unlock) cannot be missed.
    auto started = [&] { return generation.load(std::memory_order_acquire) != seen; };
    const std::function<void(int)>* job;
    {
      bool spun = spin_until(spin_ns, started);
      std::unique_lock<std::mutex> lock(mu_);
      if (!spun) start_cv_.wait(lock, started);
      if (stop_) return;
      // The newest generation: a worker that slept through jobs joins the current one, if it is
      // still open; a run_dynamic() job its caller has closed is skipped without being read.
      seen = generation.load(std::memory_order_relaxed);
      if (!open_) continue;
      if (!every_worker_) pending.fetch_add(1, std::memory_order_relaxed);
      job = job_;
    }
    std::exception_ptr error;
    try {
      RunningScope scope(this);
      (*job)(thread);
    } catch (...) {
      error = std::current_exception();
    }
    if (error) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = error;
    }
    // The last worker wakes the caller if it sleeps; it takes mu_ so that a caller between its
    // check of pending_ and its wait cannot miss the notification. After its decrement the
    // worker touches only the pool, never the job.
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

bool ThreadPool::running_here() const { return running_job_of(this); }

void ThreadPool::run(const std::function<void(int)>& fn) { run_job(fn, true); }

void ThreadPool::run_dynamic(const std::function<void(int)>& fn) { run_job(fn, false); }

void ThreadPool::run_job(const std::function<void(int)>& fn, bool every_worker) {
  if (running_job_of(this)) {
    if (every_worker)
      for (int t = 0; t < num_threads_; ++t) fn(t);
    else
      fn(0);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  // The caller is thread 0: pinned for the duration of the job when asked, then restored.
  cpu_set_t saved;
  bool restore = pin_ && pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
  if (restore) pin_current_thread(0);
  std::atomic_ref<uint64_t> generation(generation_);
  std::atomic_ref<int> pending(pending_);
  if (num_threads_ > 1) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &fn;
      every_worker_ = every_worker;
      open_ = true;
      pending.store(every_worker ? num_threads_ - 1 : 0, std::memory_order_relaxed);
      error_ = nullptr;
      generation.fetch_add(1, std::memory_order_release);
    }
    // Spinning workers see the generation without it; with no sleeper this is no system call.
    start_cv_.notify_all();
  }
  std::exception_ptr error;
  try {
    RunningScope scope(this);
    fn(0);
  } catch (...) {
    error = std::current_exception();
  }
  if (restore) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  if (num_threads_ > 1) {
    auto done = [&] { return pending.load(std::memory_order_acquire) == 0; };
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (!every_worker) {
      // No worker may join from here on: the ones inside are all the caller waits for (often
      // none: then this lock is the only one the caller takes after its part).
      lock.lock();
      open_ = false;
    }
    if (!done()) {
      if (lock.owns_lock()) lock.unlock();
      bool spun = spin_until(spin_ns_for(num_threads_, cpus_.size()), done);
      lock.lock();
      if (!spun) done_cv_.wait(lock, done);
    } else if (!lock.owns_lock()) {
      lock.lock();
    }
    open_ = false;
    job_ = nullptr;
    if (!error) error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  int64_t n_chunks = (end - begin + grain - 1) / grain;
  auto chunk = [&](int64_t c) {
    int64_t lo = begin + c * grain;
    fn(lo, end - lo < grain ? end : lo + grain);
  };
  if (n_chunks == 1 || num_threads_ == 1 || running_job_of(this)) {
    for (int64_t c = 0; c < n_chunks; ++c) chunk(c);
    return;
  }
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  // Chunks go to whichever threads come: the caller alone does them all when the workers are
  // slow to wake, and the split (the chunks) is the same either way.
  run_dynamic([&](int) {
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= n_chunks) return;
      try {
        chunk(c);
      } catch (...) {
        failed = true;
        throw;
      }
    }
  });
}

ThreadPool& default_thread_pool() {
  static ThreadPool pool([] {
    const char* env = std::getenv("TREX_THREADS");
    if (env != nullptr) {
      char* end = nullptr;
      long n = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && n > 0 && n <= 4096) return int(n);
    }
    return 0;
  }());
  return pool;
}

}  // namespace trex::core
