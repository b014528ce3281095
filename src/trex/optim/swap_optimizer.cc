#include "trex/optim/swap_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "trex/core/trace.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::optim {
namespace {

constexpr int64_t kAlignElems = 1024;  // 4 KiB of fp32: the O_DIRECT block
constexpr int64_t kScaleBlock = 16384;  // elements of scaled gradient at a time (64 KiB)

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
  copy_bytes_ = uint64_t(num_chunks_) * 12 * uint64_t(chunk_);
  for (int64_t c = num_chunks_ - 1; c >= 0; --c) order_.push_back(c);
  final_.assign(size_t(num_chunks_), 0);
  file_ = std::make_unique<SwapFile>(options_.path, 2 * copy_bytes_, options_.backend,
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
    sync_channel_->write(chunk_offset(c, cur_), uint64_t(12 * chunk_), buf);
  }
  loader_ = std::thread([this] { loader_loop(); });
  storer_ = std::thread([this] { storer_loop(); });
  updater_ = std::thread([this] { updater_loop(); });
}

SwapOptimizer::~SwapOptimizer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  load_cv_.notify_all();
  store_cv_.notify_all();
  compute_cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  if (storer_.joinable()) storer_.join();
  if (updater_.joinable()) updater_.join();
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
  done_cv_.notify_all();
  try {
    std::rethrow_exception(e);
  } catch (const IoError& x) {
    failure_ = x.what();
    failure_is_io_ = true;
  } catch (const std::exception& x) {
    failure_ = x.what();
  } catch (...) {
    failure_ = "unknown error";
  }
}

void SwapOptimizer::check_usable() const {
  if (!failed_) return;
  // The system's refusal stays an IoError (one "trex: error:" line naming the file and offset).
  if (failure_is_io_) throw IoError(failure_);
  throw std::runtime_error("swap optimizer is unusable after an error: " + failure_);
}

// One thread's part of a job: an exception stops the optimizer (fail); either way the thread
// then counts itself done, for finish_step (the loader and the updater) or for the next job's
// reads and drain_writes (the storer).
void SwapOptimizer::run_job(const std::function<void()>& body, uint64_t storer_job) {
  try {
    body();
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    fail(std::current_exception());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (storer_job > 0)
      stored_job_ = storer_job;  // the storer lags the caller by at most this one job (loader_loop)
    else
      ++idle_;
  }
  done_cv_.notify_all();
  if (storer_job > 0) load_cv_.notify_all();
}

void SwapOptimizer::drain_writes() {
  auto t0 = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return stored_job_ >= job_; });
    check_usable();
  }
  total_.wait_s += seconds_since(t0);
}

// Reads the i-th chunk of order_ into slot i mod K as soon as that slot is free, once the last
// job's write-backs are done (a chunk written late in the last step may be read early in this
// one, from another slot).
void SwapOptimizer::loader_loop() {
  std::unique_ptr<SwapFile::Channel> ch;
  uint64_t seen = 0;
  std::vector<int64_t> order;
  for (;;) {
    int copy = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      load_cv_.wait(lock, [&] { return stop_ || job_ > seen; });
      if (stop_) return;
      seen = job_;
      copy = read_copy_;
      order = order_;
    }
    run_job([&] {
      if (!ch) ch = file_->channel();
      {
        std::unique_lock<std::mutex> lock(mu_);
        load_cv_.wait(lock, [&] { return stop_ || failed_ || stored_job_ + 1 >= seen; });
        if (failed_ || stop_) return;
      }
      for (int64_t c = 0; c < num_chunks_; ++c) {
        size_t s = size_t(c % int64_t(slots_.size()));
        {
          std::unique_lock<std::mutex> lock(mu_);
          // stop_: the optimizer is destroyed with a step abandoned half-way (an exception in
          // the caller between begin_step and finish_step).
          load_cv_.wait(lock, [&] { return stop_ || failed_ || state_[s] == SlotState::kFree; });
          if (failed_ || stop_) break;
          io_begin();
        }
        auto t0 = std::chrono::steady_clock::now();
        IoEnd end{this};
        TREX_TRACE(kOptimizer, "swap.read");  // on the loader's own track of a --trace
        ch->read(chunk_offset(order[size_t(c)], copy), uint64_t(12 * chunk_), slots_[s].data());
        double dt = seconds_since(t0);
        {
          std::lock_guard<std::mutex> lock(mu_);
          end.now();
          read_s_ += dt;
          state_[s] = SlotState::kReady;
          slot_chunk_[s] = c;
        }
        compute_cv_.notify_all();  // the caller or the updater thread, whichever updates
      }
    });
  }
}

// Writes the i-th chunk of order_ back once the caller has updated it, then frees its slot. Its
// last writes of a job may run on after finish_step (header comment: Write-back behind).
void SwapOptimizer::storer_loop() {
  std::unique_ptr<SwapFile::Channel> ch;
  uint64_t seen = 0;
  std::vector<int64_t> order;  // the job's own: start_job may set the next one meanwhile
  for (;;) {
    int copy = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      store_cv_.wait(lock, [&] { return stop_ || job_ > seen; });
      if (stop_) return;
      // The next job, not the newest: the caller may have started another while this thread
      // was still writing back (or not yet awake for) the one before.
      ++seen;
      copy = job_write_copy_[seen & 1];
      order = job_order_[seen & 1];
    }
    run_job([&] {
      if (!ch) ch = file_->channel();
      for (int64_t c = 0; c < num_chunks_; ++c) {
        size_t s = size_t(c % int64_t(slots_.size()));
        {
          std::unique_lock<std::mutex> lock(mu_);
          store_cv_.wait(lock, [&] {
            return stop_ || failed_ || (state_[s] == SlotState::kStore && slot_chunk_[s] == c);
          });
          if (failed_ || stop_) break;
          io_begin();
        }
        auto t0 = std::chrono::steady_clock::now();
        IoEnd end{this};
        TREX_TRACE(kOptimizer, "swap.write");
        ch->write(chunk_offset(order[size_t(c)], copy), uint64_t(12 * chunk_), slots_[s].data());
        double dt = seconds_since(t0);
        {
          std::lock_guard<std::mutex> lock(mu_);
          end.now();
          write_s_ += dt;
          state_[s] = SlotState::kFree;
        }
        load_cv_.notify_one();
      }
    }, seen);
  }
}

void SwapOptimizer::step(const float* grads, core::bf16* weights) {
  // The caller updates (on the compute pool), so the whole pool serves the arithmetic.
  start_job(grads, weights, 1.0f, false);
  grads_final(0, num_params_);
  pump();
  finish_step();
  commit_step();
}

void SwapOptimizer::begin_step(const float* grads, core::bf16* weights, float grad_scale) {
  start_job(grads, weights, grad_scale, true);
}

void SwapOptimizer::start_job(const float* grads, core::bf16* weights, float grad_scale,
                              bool background) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_usable();  // an I/O error ends the optimizer, not only the step it hit
  }
  if (in_step_ || pending_) throw std::logic_error("SwapOptimizer::begin_step: a step is in progress");
  step_start_ = std::chrono::steady_clock::now();
  sc_ = scalars_for(step_ + 1);
  grads_ = grads;
  weights_ = weights;
  grad_scale_ = grad_scale;
  if (grad_scale != 1.0f && scaled_.empty()) scaled_.resize(size_t(kScaleBlock));
  std::fill(final_.begin(), final_.end(), 0);
  next_ = 0;
  compute_s_ = wait_s_ = 0;
  background_ = background;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The last streamed step's order of completion (header comment: Order). The slots need no
    // reset: each is free or holds a write-back of the last step the storer will free.
    if (int64_t(completed_.size()) == num_chunks_) order_ = completed_;
    completed_.clear();
    read_copy_ = cur_;
    job_write_copy_[(job_ + 1) & 1] = 1 - cur_;
    job_order_[(job_ + 1) & 1] = order_;
    idle_ = background ? 0 : 1;  // the updater thread sits out a foreground step
    ++job_;
    if (background) ++background_job_;
  }
  in_step_ = true;
  load_cv_.notify_one();
  store_cv_.notify_one();
  if (background) compute_cv_.notify_all();  // wakes the updater thread for the new job
}

void SwapOptimizer::grads_final(int64_t lo, int64_t hi) {
  if (!in_step_) throw std::logic_error("SwapOptimizer::grads_final: no step in progress");
  if (lo < 0 || hi > num_params_ || lo > hi)
    throw std::out_of_range("SwapOptimizer::grads_final: range outside the parameters");
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_usable();
    const size_t before = completed_.size();
    for (int64_t c = lo / chunk_; c < num_chunks_ && c * chunk_ < hi; ++c) {
      int64_t a = std::max(lo, c * chunk_), b = std::min(hi, c * chunk_ + chunk_valid(c));
      final_[size_t(c)] += b - a;
      if (final_[size_t(c)] > chunk_valid(c))
        throw std::logic_error("SwapOptimizer::grads_final: an element declared final twice");
      if (background_ && final_[size_t(c)] == chunk_valid(c)) completed_.push_back(c);
    }
    // Chunks complete at once go last to first, as in a flat layout's backward.
    std::reverse(completed_.begin() + std::ptrdiff_t(before), completed_.end());
  }
  if (background_) compute_cv_.notify_all();
}

// The updater thread: in a background step, updates chunks in order as each becomes complete
// and loaded, concurrently with the caller's backward. It computes on a pool of its own (one
// thread: the caller's pool is busy with the backward; the kernel's result does not depend on
// the thread count).
void SwapOptimizer::updater_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      compute_cv_.wait(lock, [&] { return stop_ || (background_job_ > seen); });
      if (stop_) return;
      seen = background_job_;
    }
    run_job([&] {
      pump();
    });
  }
}

// Updates the chunks in order, each once its gradient is complete and its state loaded.
void SwapOptimizer::pump() {
  for (; next_ < num_chunks_; ++next_) {
    int64_t c = order_[size_t(next_)];
    size_t s = size_t(next_ % int64_t(slots_.size()));
    {
      // The caller waiting for a chunk's state is exposed I/O (SwapStats::wait_s). In a
      // background step this is the updater thread, which waits for the backward's gradients
      // as much as for the state: not exposed (the caller's exposed wait is finish_step's).
      auto t0 = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      compute_cv_.wait(lock, [&] {
        return stop_ || failed_ ||
               (final_[size_t(c)] == chunk_valid(c) && state_[s] == SlotState::kReady &&
                slot_chunk_[s] == next_);
      });
      if (!background_) wait_s_ += seconds_since(t0);
      if (stop_ || failed_) return;
    }
    update_chunk(c, s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_[s] = SlotState::kStore;
    }
    store_cv_.notify_one();
  }
}

void SwapOptimizer::update_chunk(int64_t c, size_t s) {
  TREX_TRACE(kOptimizer, "swap.update");
  auto t0 = std::chrono::steady_clock::now();
  float* theta = slots_[s].data();
  float* m = theta + chunk_;
  float* v = m + chunk_;
  int64_t lo = c * chunk_, hi = lo + chunk_valid(c);
  core::ThreadPool* pool = background_ ? &serial_pool_ : options_.pool;
  // The groups overlapping [lo, hi), each stepped with its own scalars.
  size_t gi = size_t(std::upper_bound(offsets_.begin(), offsets_.end(), lo) - offsets_.begin()) - 1;
  for (; gi < groups_.size() && offsets_[gi] < hi; ++gi) {
    int64_t a = std::max(lo, offsets_[gi]), b = std::min(hi, offsets_[gi + 1]);
    if (grad_scale_ == 1.0f) {
      kernels::adamw_update(sc_[gi], theta + (a - lo), m + (a - lo), v + (a - lo), grads_ + a,
                            weights_ ? weights_ + a : nullptr, b - a, pool);
      continue;
    }
    // Scaled a block at a time (the kernel's result does not depend on the split), with the
    // same single rounding as the in-place `g[i] *= scale` of the in-memory path.
    for (int64_t x = a; x < b; x += kScaleBlock) {
      const int64_t y = std::min(b, x + kScaleBlock);
      for (int64_t i = x; i < y; ++i) scaled_[size_t(i - x)] = grads_[i] * grad_scale_;
      kernels::adamw_update(sc_[gi], theta + (x - lo), m + (x - lo), v + (x - lo), scaled_.data(),
                            weights_ ? weights_ + x : nullptr, y - x, pool);
    }
  }
  compute_s_ += seconds_since(t0);
}

void SwapOptimizer::finish_step() {
  if (!in_step_) throw std::logic_error("SwapOptimizer::finish_step: no step in progress");
  in_step_ = false;  // whatever happens below, this step is over
  {
    auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    for (int64_t c = 0; c < num_chunks_; ++c)
      if (final_[size_t(c)] != chunk_valid(c)) {
        // The updater would wait for it forever: stop the optimizer rather than hang.
        fail(std::make_exception_ptr(std::logic_error("finish_step before the whole gradient was final")));
        throw std::logic_error("SwapOptimizer::finish_step: the gradient is not final");
      }
    TREX_TRACE(kOptimizer, "swap.wait");  // exposed: what the backward did not hide
    done_cv_.wait(lock, [&] { return idle_ == 2; });
    wait_s_ += seconds_since(t0);
    check_usable();
    last_.steps = 1;
    last_.read_s = read_s_ - read_mark_;
    last_.write_s = write_s_ - write_mark_;
    last_.io_s = io_s_ - io_mark_;
    read_mark_ = read_s_, write_mark_ = write_s_, io_mark_ = io_s_;
  }
  last_.compute_s = compute_s_;
  last_.wait_s = wait_s_;
  last_.bytes_read = last_.bytes_written = copy_bytes_;
  last_.wall_s = seconds_since(step_start_);
  total_.steps += 1;
  total_.wall_s += last_.wall_s;
  total_.compute_s += last_.compute_s;
  total_.wait_s += last_.wait_s;
  total_.read_s += last_.read_s;
  total_.write_s += last_.write_s;
  total_.io_s += last_.io_s;
  total_.bytes_read += last_.bytes_read;
  total_.bytes_written += last_.bytes_written;
  pending_ = true;
}

void SwapOptimizer::commit_step() {
  if (!pending_) throw std::logic_error("SwapOptimizer::commit_step: no finished step");
  pending_ = false;
  cur_ = 1 - cur_;
  ++step_;
}

void SwapOptimizer::discard_step() {
  if (!pending_) throw std::logic_error("SwapOptimizer::discard_step: no finished step");
  pending_ = false;
}

void SwapOptimizer::read_state(StateArray which, int64_t offset, int64_t count, float* dst) {
  check_usable();
  if (in_step_ || pending_) throw std::logic_error("SwapOptimizer::read_state: between steps only");
  drain_writes();
  if (offset < 0 || count < 0 || offset + count > num_params_)
    throw std::out_of_range("SwapOptimizer::read_state: range outside the parameters");
  float* buf = slots_[0].data();
  uint64_t array_off = uint64_t(int(which)) * uint64_t(chunk_) * 4;
  for (int64_t e = offset; e < offset + count;) {
    int64_t c = e / chunk_, lo = c * chunk_;
    int64_t n = std::min(offset + count, lo + chunk_) - e;
    sync_channel_->read(chunk_offset(c, cur_) + array_off, uint64_t(chunk_) * 4, buf);
    std::memcpy(dst + (e - offset), buf + (e - lo), size_t(n) * sizeof(float));
    e += n;
  }
}

void SwapOptimizer::write_state(int64_t offset, int64_t count, const float* master,
                                const float* exp_avg, const float* exp_avg_sq) {
  check_usable();
  if (in_step_ || pending_) throw std::logic_error("SwapOptimizer::write_state: between steps only");
  drain_writes();
  float* buf = slots_[0].data();
  for (int64_t e = offset; e < offset + count;) {
    int64_t c = e / chunk_, lo = c * chunk_;
    int64_t n = std::min(offset + count, lo + chunk_) - e;
    // Read-modify-write unless the piece covers every valid element of the chunk.
    if (e != lo || n != chunk_valid(c))
      sync_channel_->read(chunk_offset(c, cur_), uint64_t(12 * chunk_), buf);
    else
      std::memset(buf, 0, size_t(3 * chunk_) * sizeof(float));
    size_t bytes = size_t(n) * sizeof(float);
    std::memcpy(buf + (e - lo), master + (e - offset), bytes);
    std::memcpy(buf + chunk_ + (e - lo), exp_avg + (e - offset), bytes);
    std::memcpy(buf + 2 * chunk_ + (e - lo), exp_avg_sq + (e - offset), bytes);
    sync_channel_->write(chunk_offset(c, cur_), uint64_t(12 * chunk_), buf);
    e += n;
  }
}

}  // namespace trex::optim
