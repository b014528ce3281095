// SwapOptimizer: AdamW whose fp32 master weights and moments (12 bytes per parameter) live in a
// slower tier, a file (swap_file.h), and pass through memory one chunk at a time with true
// double buffering: while chunk i is updated, chunk i+1 is read and chunk i-1 written back.
//
// Layout of the tier: the flat parameter range is cut into chunks of chunk_elems elements
// (a multiple of 1024, so each array's piece is a whole number of 4 KiB blocks), independent of
// group boundaries; chunk c occupies bytes [12 ce c, 12 ce (c + 1)) of a copy of the state as
// [master | exp_avg | exp_avg_sq], each ce floats (the last chunk zero-padded). The file holds
// two copies: a step reads the committed one and writes the other, and commit_step() makes the
// written one current. So a step can be discarded after the fact (a non-finite gradient, a
// clipping scale learnt only at the end of the backward) and an I/O error mid-step never
// leaves a half-updated state behind. One read and one write per chunk per step, each a single
// contiguous transfer.
//
// Order: the first step visits the chunks from the last to the first, the order in which a
// backward pass finalizes the gradient of a flat layout (the heads and the last layers first, the
// embedding last). Every later step visits them in the order they became complete in the last
// streamed step (grads_final), so the chunks read ahead are the next to be complete even where
// the backward finishes a layer's parameters out of flat order (its FFN before its attention).
// The order changes which chunk waits for which, never a result.
//
// Pipeline: a ring of K slots (K = 3 by default, at least 2), each 12 ce bytes; a slot cycles
// FREE -> (loader reads chunk i) READY -> (the caller updates it with the fused AdamW kernel on
// the compute pool) STORE -> (storer writes it back) FREE. The loader and the storer are two
// threads of their own, each with its own I/O channel; they never do optimizer arithmetic. With
// K = 3 the read of chunk i+1, the update of i and the write of i-1 all overlap; with K = 2 the
// read of i+1 waits for the write of i-1 (spec: swap-optimizer-and-parallelism.md section 4).
//
// Overlap with the backward pass: begin_step() starts the loader at once (K chunks are read
// ahead while the forward and backward run); grads_final(lo, hi) tells the optimizer that
// gradient elements [lo, hi) are complete and returns at once; an updater thread of the
// optimizer's own updates each chunk, in order, as soon as it is both complete and loaded, so
// updates, reads and write-backs all proceed behind the rest of the backward; finish_step()
// waits for what is left, and only that wait is exposed. step() is the three at once, with the
// caller doing the updates on the compute pool.
// Write-back behind: finish_step() returns once every chunk is updated (the bf16 weights are
// all written); the last chunks' write-backs finish in the background, during whatever the
// caller does next (the next step's forward). The next step reads nothing before they are done,
// read_state()/write_state() (checkpoints) wait for them, and a write that fails makes the next
// call throw, naming the file and offset. The pending state is in the copy commit_step() makes
// current, so a state read after the commit always sees every write.
//
// Results: the kernel is elementwise and rounds identically for every split of the range, so
// every step's state and bf16 weights are bitwise identical to the in-memory AdamW's, in any
// order the gradient arrives.
// Memory: the only state in memory is the slots, K x 12 x chunk_elems bytes, all charged to
// memory(); the state is swapped out chunk by chunk as it is created and when a checkpoint loads.
// A gradient scale other than 1 adds a fixed 64 KiB block of scaled gradient (not state, not
// charged), whatever the chunk size.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
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

// Where the time of steps went, from begin_step() to finish_step() (with the overlap, that
// spans the backward). read_s and write_s are the loader's and storer's busy times; io_s is the
// time at least one of them was busy (reads and writes overlap each other, so
// io_s <= read_s + write_s); compute_s is the caller's update time; wait_s is how long the
// caller waited for I/O (for a chunk to arrive, for the last writes): the exposed I/O time.
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
  // backend kIoUring where io_uring is unavailable; IoError (naming the file) when the system
  // refuses the file's size (no space, a file size limit), the file removed.
  SwapOptimizer(std::vector<ParamGroup> groups, const float* master, SwapOptions options);
  ~SwapOptimizer() override;

  // Throws IoError (a std::runtime_error naming the file and offset) on an I/O error; the
  // optimizer is unusable afterwards, and every later call throws the same error.
  void step(const float* grads, core::bf16* weights) override;

  // A step in pieces, overlapped with the pass that produces the gradient (see the header
  // comment). grads: [num_params()] fp32, read only where grads_final() has declared it final,
  // until finish_step(); weights: [num_params()] bf16 out (nullptr: not wanted), written chunk
  // by chunk. grad_scale multiplies every gradient element first, exactly as `g[i] *= scale`
  // would (gradient clipping with a scale known in advance); 1: none. The hyperparameters
  // (set_lr) are taken now. REQUIRES: no step in progress or pending.
  void begin_step(const float* grads, core::bf16* weights, float grad_scale = 1.0f);
  // Gradient elements [lo, hi) are final (each element declared once per step; a repeat is
  // caught when it overfills its chunk: std::logic_error). The updater thread takes it from
  // there; this never waits for I/O. Throws IoError after an I/O error.
  void grads_final(int64_t lo, int64_t hi);
  // Waits for the remaining updates and every write-back; the new state is then pending.
  // REQUIRES: every element declared final (else std::logic_error, and the optimizer is
  // unusable: its pipeline holds chunks that can never complete). Throws IoError after an
  // I/O error (the committed state is untouched; the optimizer is unusable afterwards).
  void finish_step();
  // The pending state becomes current and the step count advances; or the step is forgotten
  // (the state and step count stay as before begin_step; the weights written are stale).
  void commit_step();
  void discard_step();
  bool step_in_progress() const { return in_step_ || pending_; }
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
  // The chunks in the order the next step visits them (header comment: Order).
  const std::vector<int64_t>& update_order() const { return order_; }

 protected:
  void write_state(int64_t offset, int64_t count, const float* master, const float* exp_avg,
                   const float* exp_avg_sq) override;
  int64_t load_piece() const override { return chunk_; }

 private:
  enum class SlotState { kFree, kReady, kStore };
  // Byte offset of chunk c in copy `copy` (0 or 1) of the state.
  uint64_t chunk_offset(int64_t c, int copy) const {
    return uint64_t(copy) * copy_bytes_ + uint64_t(c) * 12 * uint64_t(chunk_);
  }
  // background: the updater thread updates (begin_step); else the caller, in pump() (step()).
  void start_job(const float* grads, core::bf16* weights, float grad_scale, bool background);
  // Updates every chunk in order, waiting for each to be complete and loaded.
  void pump();
  void update_chunk(int64_t c, size_t slot);
  void updater_loop();
  // storer_job > 0: the storer's job of that number; it marks the job's write-backs done
  // (stored_job_) instead of counting itself idle (finish_step does not wait for them).
  void run_job(const std::function<void()>& body, uint64_t storer_job = 0);
  // Waits for the last step's write-backs (the caller's wait: exposed, added to total().wait_s);
  // throws if one failed. REQUIRES: mu_ not held.
  void drain_writes();
  int64_t chunk_valid(int64_t c) const;
  void loader_loop();
  void storer_loop();
  void fail(std::exception_ptr e);  // REQUIRES: mu_ held
  void check_usable() const;

  SwapOptions options_;
  int64_t chunk_ = 0;
  int64_t num_chunks_ = 0;
  uint64_t copy_bytes_ = 0;        // one copy of the state in the file
  int cur_ = 0;                    // the committed copy
  std::vector<int64_t> order_;     // chunk visited i-th (header comment: Order); mu_ to write
  std::vector<int64_t> completed_; // this streamed step's chunks in the order they became complete
  std::unique_ptr<SwapFile> file_;
  std::vector<AccountedBuffer> slots_;
  std::unique_ptr<SwapFile::Channel> sync_channel_;  // between steps: init, checkpoints

  std::mutex mu_;
  // One condition variable per waiter, so each hand-off wakes only the thread it concerns (on a
  // busy machine every needless wake-up costs a scheduling slice).
  std::condition_variable load_cv_, compute_cv_, store_cv_;
  std::condition_variable done_cv_;  // finish_step: the loader, storer and updater are done
  std::vector<SlotState> state_;
  std::vector<int64_t> slot_chunk_;  // the position in order_ a slot holds
  int read_copy_ = 0;  // of the current job
  // Per job, by its number's parity, for the storer (which may still be on the job before the
  // current one, never further behind: the loader waits for it).
  int job_write_copy_[2] = {1, 1};
  std::vector<int64_t> job_order_[2];
  uint64_t job_ = 0;  // generation: a new step for the I/O threads
  uint64_t background_job_ = 0;  // generation: a new step for the updater thread
  uint64_t stored_job_ = 0;  // the last job whose write-backs are all done (or abandoned)
  int idle_ = 2;      // threads (loader, updater) done with the current job
  bool stop_ = false;
  bool failed_ = false;
  std::string failure_;
  bool failure_is_io_ = false;  // failure_ came from an IoError (check_usable rethrows it as one)
  // Busy times since construction (a step's are the growth since the last finish_step: a
  // write-back that finishes after it counts in the next step).
  double read_s_ = 0, write_s_ = 0;
  int io_active_ = 0;                // transfers in flight (loader, storer)
  std::chrono::steady_clock::time_point io_since_;  // when io_active_ last became nonzero
  double io_s_ = 0;                  // time with io_active_ > 0
  double read_mark_ = 0, write_mark_ = 0, io_mark_ = 0;  // their values at the last finish_step
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

  // The step in progress (set by the caller between steps; the updater reads them during one).
  bool in_step_ = false, pending_ = false;
  bool background_ = false;              // the updater thread does the arithmetic
  core::ThreadPool serial_pool_{1};      // the updater thread's
  const float* grads_ = nullptr;
  core::bf16* weights_ = nullptr;
  float grad_scale_ = 1.0f;
  std::vector<float> scaled_;            // a block of scaled gradient (kScaleBlock, 64 KiB)
  std::vector<kernels::AdamWScalars> sc_;
  std::vector<int64_t> final_;           // per chunk: gradient elements declared final (mu_)
  int64_t next_ = 0;                     // position in order_ of the next chunk to update
  std::chrono::steady_clock::time_point step_start_;
  double compute_s_ = 0, wait_s_ = 0;

  SwapStats last_, total_;
  std::thread loader_, storer_, updater_;
};

}  // namespace trex::optim
