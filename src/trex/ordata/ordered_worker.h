// One long-lived thread that runs jobs one at a time, in the order they were submitted.
//
// The corpus run finishes block b (dedup, selection, files) here while block b+1 is built.
// A thread per block (std::async) gave each block a fresh thread, and glibc gives new threads
// their own malloc arenas, which keep the freed block buffers: resident memory then grew with
// the number of blocks. One thread for the whole run reuses one arena.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace trex::ordata {

class OrderedWorker {
 public:
  OrderedWorker() : thread_([this] { loop(); }) {}
  // Runs the jobs still queued, then joins.
  ~OrderedWorker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  OrderedWorker(const OrderedWorker&) = delete;
  OrderedWorker& operator=(const OrderedWorker&) = delete;

  // Queues fn; its result (or its exception) arrives through the future.
  template <class F>
  auto submit(F fn) -> std::future<decltype(fn())> {
    auto task = std::make_shared<std::packaged_task<decltype(fn())()>>(std::move(fn));
    auto result = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.emplace_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return result;
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();  // a packaged_task: an exception goes to its future
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace trex::ordata
