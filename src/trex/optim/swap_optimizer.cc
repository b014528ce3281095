#include "trex/optim/swap_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "trex/util/error.h"

namespace trex::optim {
namespace {

constexpr int64_t kAlignElems = 1024;  // 4 KiB of fp32: the O_DIRECT block

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double SwapStats::hidden_fraction() const {
  if (io_s <= 0) return 1.0;
  return std::clamp(1.0 - wait_s / io_s, 0.0, 1.0);
}

void SwapOptimizer::io_begin() {
  if (io_active_++ == 0) io_since_ = std::chrono::steady_clock::now();
}

void SwapOptimizer::io_end() {
  if (--io_active_ == 0) io_s_ += seconds_since(io_since_);
}

int64_t SwapOptimizer::chunk_elems_for_budget(size_t budget_bytes, int slots) {
  if (slots < 1) return 0;
  int64_t c = int64_t(budget_bytes / (size_t(slots) * 12));
  return c / kAlignElems * kAlignElems;
}

SwapOptimizer::SwapOptimizer(std::vector<ParamGroup> groups, const float* master,
                             SwapOptions options)
    : Optimizer(std::move(groups)), options_(std::move(options)) {
  if (options_.chunk_elems < 1)
    throw InputError::field("chunk_elems", "must be at least 1, got " +
                                               std::to_string(options_.chunk_elems));
  if (options_.slots < 2)
    throw InputError::field("slots", "double buffering needs at least 2 slots, got " +
                                         std::to_string(options_.slots));
  if (options_.path.empty()) throw InputError::field("path", "the swap file path is empty");
  // A chunk never exceeds the parameters (which also keeps the rounding below from overflowing).
  int64_t want = std::min(options_.chunk_elems, num_params_);
  chunk_ = (want + kAlignElems - 1) / kAlignElems * kAlignElems;
  num_chunks_ = (num_params_ + chunk_ - 1) / chunk_;
  file_ = std::make_unique<SwapFile>(options_.path, chunk_offset(num_chunks_), options_.backend,
                                     options_.direct);
  // More slots than chunks would never be used.
  int k = int(std::min<int64_t>(options_.slots, num_chunks_));
  for (int s = 0; s < k; ++s) slots_.emplace_back(&memory_, size_t(3 * chunk_));
  state_.assign(size_t(k), SlotState::kFree);
  slot_chunk_.assign(size_t(k), -1);
  sync_channel_ = file_->channel();
  // Swap the initial state out chunk by chunk: the whole state is never in memory.
  float* buf = slots_[0].data();
  for (int64_t c = 0; c < num_chunks_; ++c) {
    int64_t lo = c * chunk_, n = chunk_valid(c);
    std::memset(buf, 0, size_t(3 * chunk_) * sizeof(float));
    std::memcpy(buf, master + lo, size_t(n) * sizeof(float));
    sync_channel_->write(chunk_offset(c), uint64_t(12 * chunk_), buf);
  }
  loader_ = std::thread([this] { loader_loop(); });
  storer_ = std::thread([this] { storer_loop(); });
}

SwapOptimizer::~SwapOptimizer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  load_cv_.notify_all();
  store_cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  if (storer_.joinable()) storer_.join();
}

int64_t SwapOptimizer::chunk_valid(int64_t c) const {
  return std::min(chunk_, num_params_ - c * chunk_);
}

void SwapOptimizer::fail(std::exception_ptr e) {
  if (failed_) return;
  failed_ = true;
  load_cv_.notify_all();
  compute_cv_.notify_all();
  store_cv_.notify_all();
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    failure_ = x.what();
  } catch (...) {
    failure_ = "unknown error";
  }
}

void SwapOptimizer::check_usable() const {
  if (failed_)
    throw std::runtime_error("swap optimizer is unusable after an I/O error: " + failure_);
}

// Reads chunk i into slot i mod K as soon as that slot is free.
void SwapOptimizer::loader_loop() {
  std::unique_ptr<SwapFile::Channel> ch;
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      load_cv_.wait(lock, [&] { return stop_ || job_ > seen; });
      if (stop_) return;
      seen = job_;
    }
    try {
      if (!ch) ch = file_->channel();
      for (int64_t c = 0; c < num_chunks_; ++c) {
        size_t s = size_t(c % int64_t(slots_.size()));
        {
          std::unique_lock<std::mutex> lock(mu_);
          load_cv_.wait(lock, [&] { return failed_ || state_[s] == SlotState::kFree; });
          if (failed_) break;
          io_begin();
        }
        auto t0 = std::chrono::steady_clock::now();
        IoEnd end{this};
        ch->read(chunk_offset(c), uint64_t(12 * chunk_), slots_[s].data());
        double dt = seconds_since(t0);
        {
          std::lock_guard<std::mutex> lock(mu_);
          end.now();
          read_s_ += dt;
          state_[s] = SlotState::kReady;
          slot_chunk_[s] = c;
        }
        compute_cv_.notify_one();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      fail(std::current_exception());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++idle_;
    }
    compute_cv_.notify_one();
  }
}

// Writes chunk i back once the caller has updated it, then frees its slot.
void SwapOptimizer::storer_loop() {
  std::unique_ptr<SwapFile::Channel> ch;
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      store_cv_.wait(lock, [&] { return stop_ || job_ > seen; });
      if (stop_) return;
      seen = job_;
    }
    try {
      if (!ch) ch = file_->channel();
      for (int64_t c = 0; c < num_chunks_; ++c) {
        size_t s = size_t(c % int64_t(slots_.size()));
        {
          std::unique_lock<std::mutex> lock(mu_);
          store_cv_.wait(lock, [&] {
            return failed_ || (state_[s] == SlotState::kStore && slot_chunk_[s] == c);
          });
          if (failed_) break;
          io_begin();
        }
        auto t0 = std::chrono::steady_clock::now();
        IoEnd end{this};
        ch->write(chunk_offset(c), uint64_t(12 * chunk_), slots_[s].data());
        double dt = seconds_since(t0);
        {
          std::lock_guard<std::mutex> lock(mu_);
          end.now();
          write_s_ += dt;
          state_[s] = SlotState::kFree;
        }
        load_cv_.notify_one();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      fail(std::current_exception());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++idle_;
    }
    compute_cv_.notify_one();
  }
}

void SwapOptimizer::step(const float* grads, core::bf16* weights) {
  auto t_start = std::chrono::steady_clock::now();
  std::vector<kernels::AdamWScalars> sc = scalars_for(step_ + 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_usable();
    std::fill(state_.begin(), state_.end(), SlotState::kFree);
    read_s_ = write_s_ = io_s_ = 0;
    idle_ = 0;
    ++job_;
  }
  load_cv_.notify_one();
  store_cv_.notify_one();
  double compute_s = 0, wait_s = 0;
  for (int64_t c = 0; c < num_chunks_; ++c) {
    size_t s = size_t(c % int64_t(slots_.size()));
    {
      auto t0 = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      compute_cv_.wait(lock, [&] {
        return failed_ || (state_[s] == SlotState::kReady && slot_chunk_[s] == c);
      });
      wait_s += seconds_since(t0);
      if (failed_) break;
    }
    auto t0 = std::chrono::steady_clock::now();
    float* theta = slots_[s].data();
    float* m = theta + chunk_;
    float* v = m + chunk_;
    int64_t lo = c * chunk_, hi = lo + chunk_valid(c);
    // The groups overlapping [lo, hi), each stepped with its own scalars.
    size_t g = size_t(std::upper_bound(offsets_.begin(), offsets_.end(), lo) - offsets_.begin()) - 1;
    for (; g < groups_.size() && offsets_[g] < hi; ++g) {
      int64_t a = std::max(lo, offsets_[g]), b = std::min(hi, offsets_[g + 1]);
      kernels::adamw_update(sc[g], theta + (a - lo), m + (a - lo), v + (a - lo), grads + a,
                            weights ? weights + a : nullptr, b - a, options_.pool);
    }
    compute_s += seconds_since(t0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_[s] = SlotState::kStore;
    }
    store_cv_.notify_one();
  }
  {
    auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    compute_cv_.wait(lock, [&] { return idle_ == 2; });
    wait_s += seconds_since(t0);
    check_usable();
    last_.steps = 1;
    last_.read_s = read_s_;
    last_.write_s = write_s_;
    last_.io_s = io_s_;
  }
  last_.compute_s = compute_s;
  last_.wait_s = wait_s;
  last_.bytes_read = last_.bytes_written = uint64_t(num_chunks_) * 12 * uint64_t(chunk_);
  last_.wall_s = seconds_since(t_start);
  total_.steps += 1;
  total_.wall_s += last_.wall_s;
  total_.compute_s += last_.compute_s;
  total_.wait_s += last_.wait_s;
  total_.read_s += last_.read_s;
  total_.write_s += last_.write_s;
  total_.io_s += last_.io_s;
  total_.bytes_read += last_.bytes_read;
  total_.bytes_written += last_.bytes_written;
  ++step_;
}

void SwapOptimizer::read_state(StateArray which, int64_t offset, int64_t count, float* dst) {
  check_usable();
  if (offset < 0 || count < 0 || offset + count > num_params_)
    throw std::out_of_range("SwapOptimizer::read_state: range outside the parameters");
  float* buf = slots_[0].data();
  uint64_t array_off = uint64_t(int(which)) * uint64_t(chunk_) * 4;
  for (int64_t e = offset; e < offset + count;) {
    int64_t c = e / chunk_, lo = c * chunk_;
    int64_t n = std::min(offset + count, lo + chunk_) - e;
    sync_channel_->read(chunk_offset(c) + array_off, uint64_t(chunk_) * 4, buf);
    std::memcpy(dst + (e - offset), buf + (e - lo), size_t(n) * sizeof(float));
    e += n;
  }
}

void SwapOptimizer::write_state(int64_t offset, int64_t count, const float* master,
                                const float* exp_avg, const float* exp_avg_sq) {
  check_usable();
  float* buf = slots_[0].data();
  for (int64_t e = offset; e < offset + count;) {
    int64_t c = e / chunk_, lo = c * chunk_;
    int64_t n = std::min(offset + count, lo + chunk_) - e;
    // Read-modify-write unless the piece covers every valid element of the chunk.
    if (e != lo || n != chunk_valid(c))
      sync_channel_->read(chunk_offset(c), uint64_t(12 * chunk_), buf);
    else
      std::memset(buf, 0, size_t(3 * chunk_) * sizeof(float));
    size_t bytes = size_t(n) * sizeof(float);
    std::memcpy(buf + (e - lo), master + (e - offset), bytes);
    std::memcpy(buf + chunk_ + (e - lo), exp_avg + (e - offset), bytes);
    std::memcpy(buf + 2 * chunk_ + (e - lo), exp_avg_sq + (e - offset), bytes);
    sync_channel_->write(chunk_offset(c), uint64_t(12 * chunk_), buf);
    e += n;
  }
}

}  // namespace trex::optim
