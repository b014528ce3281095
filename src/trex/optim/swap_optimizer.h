// SwapOptimizer: AdamW whose fp32 master weights and moments (12 bytes per parameter) live in a
// slower tier, a file (swap_file.h), and pass through memory one chunk at a time with true
// double buffering: while chunk i is updated, chunk i+1 is read and chunk i-1 written back.
//
// Layout of the tier: the flat parameter range is cut into chunks of chunk_elems elements
// (a multiple of 1024, so each array's piece is a whole number of 4 KiB blocks), independent of
// group boundaries; chunk c occupies bytes [12 ce c, 12 ce (c + 1)) of the file as
// [master | exp_avg | exp_avg_sq], each ce floats (the last chunk zero-padded). One read and one
// write per chunk per step, each a single contiguous transfer.
//
// Pipeline: a ring of K slots (K = 3 by default, at least 2), each 12 ce bytes; a slot cycles
// FREE -> (loader reads chunk i) READY -> (the caller updates it with the fused AdamW kernel on
// the compute pool) STORE -> (storer writes it back) FREE. The loader and the storer are two
// threads of their own, each with its own I/O channel; they never do optimizer arithmetic. With
// K = 3 the read of chunk i+1, the update of i and the write of i-1 all overlap; with K = 2 the
// read of i+1 waits for the write of i-1 (spec: swap-optimizer-and-parallelism.md section 4).
//
// Results: the kernel is elementwise and rounds identically for every split of the range, so
// every step's state and bf16 weights are bitwise identical to the in-memory AdamW's.
// Memory: the only state in memory is the slots, K x 12 x chunk_elems bytes, all charged to
// memory(); the state is swapped out chunk by chunk as it is created and when a checkpoint loads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trex/core/thread_pool.h"
#include "trex/optim/optimizer.h"
#include "trex/optim/swap_file.h"

namespace trex::optim {

struct SwapOptions {
  std::string path;                // the swap file: must not exist; removed with the optimizer
  int64_t chunk_elems = 1 << 20;   // elements per chunk, >= 1; at most the parameter count,
                                   // then rounded up to a multiple of 1024
  int slots = 3;                   // K, >= 2
  IoBackend backend = IoBackend::kAuto;
  bool direct = false;             // O_DIRECT: bypass the page cache where the filesystem allows
  core::ThreadPool* pool = nullptr;  // compute pool (nullptr: core::default_thread_pool())
};

// Where the time of steps went. read_s and write_s are the loader's and storer's busy times;
// io_s is the time at least one of them was busy (reads and writes overlap each other, so
// io_s <= read_s + write_s); compute_s is the caller's update time; wait_s is how long the
// caller waited for I/O (for a chunk to arrive, for the last writes).
struct SwapStats {
  int64_t steps = 0;
  double wall_s = 0, compute_s = 0, wait_s = 0, read_s = 0, write_s = 0, io_s = 0;
  uint64_t bytes_read = 0, bytes_written = 0;
  // Share of the I/O time hidden behind compute: (io_s - wait_s) / io_s, the part of the time
  // I/O was in flight during which the caller was not waiting for it, clamped to [0, 1]; 1 when
  // there was no I/O. It cannot exceed compute_s / io_s.
  double hidden_fraction() const;
};

class SwapOptimizer : public Optimizer {
 public:
  // master: the initial fp32 weights, [sum of group sizes] (moments start at zero); written to
  // the tier chunk by chunk. Throws InputError for chunk_elems < 1 (field "chunk_elems"),
  // slots < 2 ("slots"), an empty path, one that exists or cannot be created (naming it), or
  // backend kIoUring where io_uring is unavailable.
  SwapOptimizer(std::vector<ParamGroup> groups, const float* master, SwapOptions options);
  ~SwapOptimizer() override;

  // Throws std::runtime_error on an I/O error; the optimizer is unusable afterwards.
  void step(const float* grads, core::bf16* weights) override;
  void read_state(StateArray which, int64_t offset, int64_t count, float* dst) override;

  // The chunk size for a memory budget: floor(budget / (slots x 12 B)), rounded down to a
  // multiple of 1024; 0 when the budget is below one 1024-element chunk per slot.
  static int64_t chunk_elems_for_budget(size_t budget_bytes, int slots);

  int64_t chunk_elems() const { return chunk_; }
  int64_t num_chunks() const { return num_chunks_; }
  int slots() const { return int(slots_.size()); }
  // The bound on resident state: slots() x 12 x chunk_elems() bytes.
  size_t buffer_bytes() const { return slots_.size() * 12 * size_t(chunk_); }
  IoBackend backend() const { return file_->backend(); }
  bool direct() const { return file_->direct(); }
  const std::string& fallback_reason() const { return file_->fallback_reason(); }
  const SwapStats& last_step() const { return last_; }
  const SwapStats& total() const { return total_; }

 protected:
  void write_state(int64_t offset, int64_t count, const float* master, const float* exp_avg,
                   const float* exp_avg_sq) override;
  int64_t load_piece() const override { return chunk_; }

 private:
  enum class SlotState { kFree, kReady, kStore };
  uint64_t chunk_offset(int64_t c) const { return uint64_t(c) * 12 * uint64_t(chunk_); }
  int64_t chunk_valid(int64_t c) const;
  void loader_loop();
  void storer_loop();
  void fail(std::exception_ptr e);  // REQUIRES: mu_ held
  void check_usable() const;

  SwapOptions options_;
  int64_t chunk_ = 0;
  int64_t num_chunks_ = 0;
  std::unique_ptr<SwapFile> file_;
  std::vector<AccountedBuffer> slots_;
  std::unique_ptr<SwapFile::Channel> sync_channel_;  // between steps: init, checkpoints

  std::mutex mu_;
  // One condition variable per waiter, so each hand-off wakes only the thread it concerns (on a
  // busy machine every needless wake-up costs a scheduling slice).
  std::condition_variable load_cv_, compute_cv_, store_cv_;
  std::vector<SlotState> state_;
  std::vector<int64_t> slot_chunk_;
  uint64_t job_ = 0;  // generation: a new step for the I/O threads
  int idle_ = 2;      // I/O threads done with the current job
  bool stop_ = false;
  bool failed_ = false;
  std::string failure_;
  double read_s_ = 0, write_s_ = 0;  // busy time of the current job
  int io_active_ = 0;                // transfers in flight (loader, storer)
  std::chrono::steady_clock::time_point io_since_;  // when io_active_ last became nonzero
  double io_s_ = 0;                  // time with io_active_ > 0 in the current job
  void io_begin();                   // REQUIRES: mu_ held
  void io_end();                     // REQUIRES: mu_ held
  // Ends one transfer's I/O interval exactly once: now() with mu_ held, or when unwinding.
  struct IoEnd {
    SwapOptimizer* self;
    bool done = false;
    void now() {
      self->io_end();
      done = true;
    }
    ~IoEnd() {
      if (done) return;
      std::lock_guard<std::mutex> lock(self->mu_);
      self->io_end();
    }
  };

  SwapStats last_, total_;
  std::thread loader_, storer_;
};

}  // namespace trex::optim
