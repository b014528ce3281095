#include "trex/core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace trex::core {

namespace {

// The pool whose job this thread is running, if any: a nested run() on it goes serial.
thread_local const ThreadPool* tls_running_pool = nullptr;

struct RunningScope {
  const ThreadPool* saved;
  explicit RunningScope(const ThreadPool* pool) : saved(tls_running_pool) { tls_running_pool = pool; }
  ~RunningScope() { tls_running_pool = saved; }
};

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

void ThreadPool::worker_loop(int thread) {
  if (pin_) pin_current_thread(thread);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      RunningScope scope(this);
      (*job)(thread);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (tls_running_pool == this) {
    for (int t = 0; t < num_threads_; ++t) fn(t);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  // The caller is thread 0: pinned for the duration of the job when asked, then restored.
  cpu_set_t saved;
  bool restore = pin_ && pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
  if (restore) pin_current_thread(0);
  if (num_threads_ > 1) {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_ = num_threads_ - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  std::exception_ptr error;
  try {
    RunningScope scope(this);
    fn(0);
  } catch (...) {
    error = std::current_exception();
  }
  if (restore) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (!error) error = error_;
  error_ = nullptr;
  lock.unlock();
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
  if (n_chunks == 1 || num_threads_ == 1 || tls_running_pool == this) {
    for (int64_t c = 0; c < n_chunks; ++c) chunk(c);
    return;
  }
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  run([&](int) {
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
