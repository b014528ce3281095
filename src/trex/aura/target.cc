// Tuning targets: spaces, counts and performance models of the tunable kernels.
//
// GEMM (docs/aura.md, "GEMM model"): pipes fma and load overlap; packing, the thread imbalance
// and the pool job are serial. With T_fma = 2mnk / peak(ukernel) x (padded tiles / tiles), 6 x 16's
// peak on an AVX-512 machine at most kNarrowTileShareOfWide of 12 x 32's:
//   fma   T_fma
//         each micro-kernel call's C tile and chain fill and drain (pair kc, ukernel):
//           ceil(tiles / threads) ceil(k / KC) x 1.45 ns per 64-byte line of the tile
//   load  A slivers streamed from the level holding the A block (pair mc, kc):
//           4 m k ceil(n / NR) / bw(L2 if 4 rows KC <= L2/2, else L3), rows = the block gemm.cc
//           packs: ceil(panels / ceil(panels / (MC / MR))) MR panels of all of m
//         B slivers reloaded into L1 once per row block of each thread's part (pair mc, split):
//           4 k n_t ceil(m_t / MC) / bw_L2 of one core, m_t x n_t the largest part (split 1:
//           ceil(panels / threads) MR panels x n; split 2: m x ceil(slivers / threads) NR slivers)
//         C tiles read and written once per depth block (kc): 8 m n ceil(k / KC) / bw_L2
//         L1 overflow (pair kc, ukernel): when (MR + NR) KC 4 > L1 (W-1)/W the B sliver is
//           refetched from L2 on every MR rows: 4 KC NR ceil(m/MR) ceil(n/NR) ceil(k/KC) / bw_L2
//   serial the threading of gemm.cc (since 981268b): each thread computes its own contiguous
//           rows (split 1: ceil(m/MR) panels) or columns (split 2: ceil(n/NR) slivers) of C start
//           to end with its own packed A and B, the units dealt out evenly, one pool job a call:
//           imbalance (pair split, ukernel): (ceil(units/threads) threads / units - 1) T_fma;
//           B packing 8 k n / bw_mem, and (threads - 1) 8 k n / bw_mem more on split 1 (every
//           thread packs all of B); A packing (pair nc, split) 8 m k / bw_mem per column block
//           of each thread's part: ceil(n / NC) on split 1, sum over threads of
//           ceil(n_thread / NC) on split 2 (every thread packs all of A); 5 us for the pool job
//           when threads > 1
//   forbidden (pair kc, nc): 4 KC NC > L3 / 2.
// Row kernels: pipes memory and vector overlap; block scheduling is serial:
//   memory  (in + out) / bw(level of the working set) with normal stores; with non-temporal
//           stores in / bw(level) + out / bw_mem, and at the memory level (in + out) / bw_mem
//           divided by the probe's triad_nt / triad where the tune runs the probe's threads,
//           else 2% more than normal stores (no evidence of a gain);
//   vector  elements x lane-ops per element / (lanes x FMA rate);
//   serial  blocks x 1 us / threads, and the thread imbalance of ceil(blocks / threads);
//   a tie between the store kinds (the vector pipe hides both) keeps the kernel's own by size.
// Cross-entropy adds the vocabulary tile: the sum-of-exp pass waits for its span's maximum, so
// it is serial after the max pass; it reads the span from L1 (tile <= one L1 way), L2 (row,
// when it fits half of L2) or memory. The per-tile combine overlaps the next tile's loads. A
// tiled row also computes its exps again in the gradient pass (a whole row keeps them).
// Work-split kernels (rope, kv_compress, sparse attention, mHC): pipes memory (minimum traffic
// at the working set's level) and vector (FLOPs at the FMA peak, or lane operations per element)
// overlap; each blocking parameter sets the number of parallel jobs, which costs 1 us each per
// thread plus the thread imbalance of ceil(jobs / threads) on the larger pipe (sparse attention:
// the pool's schedule over its unequal jobs, the forward's own block schedule); mHC's stage-2 column block adds two small GEMM
// calls (2 us each) per block and token chunk of 512; sparse attention's backward chunks add
// zeroing and reducing their private key-gradient slices (8 bytes per workspace float).
#include "trex/aura/target.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "trex/core/cpu_features.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/kv_compressor.h"
#include "trex/kernels/mhc.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/tuning_builtins.h"
#include "trex/util/error.h"

namespace trex::aura {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// GEMM's AVX2 micro-kernel (6 x 16) on an AVX-512 machine runs at most this share of the AVX-512
// one's (12 x 32) FMA rate. The probe times each ISA's FMA loop without loads; the micro-kernels
// also load and broadcast their operands, 6 x 16 twice as many per FLOP (8 per 12 256-bit FMAs,
// against 14 per 24 512-bit ones). Where the probe finds both loops at one rate (Zen 4 runs
// 512-bit FMAs double-pumped: 116.5 against 117.3 GFLOP/s a core), the model priced the two
// tiles alike and chose 6 x 16 on an edge's padding or a thread's imbalance: 1.061 of the best at
// one thread (GEMM 256x512x2048, session 27) and 1.166 and 1.234 at two (512x256x2048,
// 256x512x2048, session 29). Measured, best 6 x 16 time over best 12 x 32 time per space
// (bench/aura_gemm_call_cost.py "rate"): 0.912-0.989 on 10 of the 12 Zen 4 cells (six v4-micro
// classes, one and two threads), 1.014-1.026 on the two with k = 256 (one depth block), median
// 0.965 (bench/results/aura_s29/README.md). Where the probe already prices 6 x 16 lower (an AVX2
// rate of half, sessions 14-17) the cap changes nothing.
constexpr double kNarrowTileShareOfWide = 0.965;

int param_index(const TuneTarget& t, const std::string& name) {
  for (size_t i = 0; i < t.space.size(); ++i)
    if (t.space[i].name == name) return int(i);
  return -1;
}

std::vector<int64_t> sorted_unique(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Register tile of a ukernel value (0 = the widest).
void tile_of(int64_t ukernel, const std::string& isa, int& mr, int& nr) {
  bool wide = ukernel == 3 || (ukernel == 0 && isa == "avx512");
  mr = wide ? 12 : 6;
  nr = wide ? 32 : 16;
}

bool is_mhc(const std::string& kernel) { return kernel.rfind("mhc.", 0) == 0; }

// A GEMM micro-kernel call's cost beyond its FMAs (docs/aura.md, GEMM model): 1.45 ns per 64-byte
// line of its C tile, no fixed part: 35 ns for AVX-512's 12 x 32 (24 lines), 8.7 ns for 6 x 16
// (6 lines). Fitted to the kc moves of the saved one-thread tables of sessions 8-11
// (bench/aura_gemm_call_cost.py: a configuration at kc against the same one at the deepest kc,
// each micro-kernel's FMA rate the one the table measures for it): the median per-call time that
// explains them is 35 ns for 12 x 32 and 7 ns for 6 x 16 (which runs at 0.95-1.01 of 12 x 32's
// rate there, not at the probe's AVX2 rate). Measured in seconds on the 111 GFLOP/s VM; whether it
// is a time or a number of FMA steps on today's 2x faster VM is open (its one loaded two-thread
// table, session 15, agrees with the time; session 16's, too noisy to judge, with the steps).
// The figure is AuraHardware::gemm_call_line_s's default; a calibration (calibrate.h) may refit it.

// The caches GEMM's analytic blocking is derived from: the hardware description's (which takes
// sysfs's where the description names none, hardware.cc), so a table replayed with the
// description of the machine it was measured on gets that machine's space and built-in. Live,
// the two agree (the kernels read sysfs); on a machine whose sysfs lists no caches (session 15's
// VM) both fall back to the same defaults.
kernels::CacheSizes caches_of(const AuraHardware& hw) {
  kernels::CacheSizes cs;
  cs.l1_bytes = hw.l1_bytes;
  cs.l1_ways = hw.l1_ways;
  cs.l2_bytes = hw.l2_bytes;
  cs.l3_bytes = hw.l3_bytes;
  return cs;
}

bool g_every_path = false;  // ScopedEveryPath

// Kernels whose parameters only split the work into parallel jobs (the generic model below).
bool is_work_split(const std::string& kernel) {
  return kernel == "rope.fwd" || kernel.rfind("kv_compress.", 0) == 0 ||
         kernel.rfind("sparse_attention.", 0) == 0 || is_mhc(kernel);
}

// Sparse attention's timed case (kernel_suite_cases.cc make_cases_at): window 64, the
// compression ratio of the shape's optional fourth dimension (0, 4 or 128; 4 when left out).
constexpr int64_t kAttentionWindow = 64;

int64_t attention_ratio(const TuneTarget& t) { return t.dims.size() > 3 ? t.dims[3] : 4; }

// What one forward piece costs beyond its tokens' work: a counter fetch and a run of the token
// loop, not a pool job. Session 24 (bench/results/attn_s24/piece_cost.log: fp32 2048x8x128 ratio
// 4, one thread, query_block 4 and 1 against 64, three runs of 21 rounds, loaded 9) read -0.08
// to +0.20 us per extra piece, none of it told apart from zero; priced at the largest, 0.2 us
// (it was 1 us, a pool job's, which made 512 pieces of 4 tokens 0.5 ms of a ~8 ms call).
constexpr double kAttentionPieceSeconds = 0.2e-6;

// Whether the kv_compress backward, with no channel_block tuned, splits by entries
// (kv_compressor.cc backward: AVX-512 rows, ratio != 4, at least 2^18 floats per input). Given
// the forward's statistics (kv_compress_backward_from_stats: what the model and the suite's timed
// case run since session 28) it is one pool job per thread, each a range of rows of every entry
// in one gradient pass: ceil(ratio / span) ranges of span rows, span the multiple of kStatsRows
// (4) at or above ratio / threads, so nearly equal work (ratio 128: 64 + 64 on two threads,
// 44 + 44 + 40 on three), priced as equal. A tuned channel_block (> 0) keeps the channel-block split,
// which ignores the statistics and derives them again (a max and a sum pass before the gradient
// pass), so there channel_block 0, "the kernel's own split", is a point of the space and the
// built-in.
bool kv_backward_by_entries(int64_t tokens, int64_t head_dim, int64_t ratio) {
  return kernels::row_isa() == core::Isa::kAvx512 && ratio != 4 &&
         kernels::compressor_entries(tokens, int(ratio)) > 0 &&
         tokens * kernels::compressor_width(int(ratio), head_dim) >= (int64_t(1) << 18);
}

// Whether the kv_compress forward, with no channel_block tuned, takes whole entries one at a time
// (kv_compressor.cc forward_pipelined512, session 27: AVX-512 rows, ratio != 4, any size): one
// pool run of a job per thread, each claiming entries from a counter, two in flight. A tuned
// channel_block keeps the chunks of (entry, channel block) items, 1.2-1.8x slower where measured,
// so there channel_block 0, "the kernel's own split", is a point of the space and the built-in.
bool kv_forward_by_entries(int64_t tokens, int64_t ratio) {
  return kernels::row_isa() == core::Isa::kAvx512 && ratio != 4 && kernels::compressor_entries(tokens, int(ratio)) > 0;
}

// Whether some shape of (tokens, head_dim, ratio)'s tuning class splits by entries untuned: the
// class's largest member, each dimension rounded up to a power of two (kernels/tuning.cc
// shape_class; the ratio as given). A tuning entry serves the whole class, and any channel_block
// it sets forces the channel-block split on every member, so where the largest member splits by
// entries and this shape does not (class 2048x128x128 holds [1500, 100, 128], 150,000 floats,
// and the model's [2048, 128, 128], exactly 2^18: 0.83 vs 0.30 ms forced), the only value a tune
// here may write without slowing that member is 0, the kernel's own choice at every member.
bool kv_class_by_entries(int64_t tokens, int64_t head_dim, int64_t ratio) {
  auto pow2 = [](int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
  };
  return kv_backward_by_entries(pow2(tokens), pow2(head_dim), ratio);
}

// Parallel jobs of one call under a parameter value (work-split kernels).
double jobs_of(const TuneTarget& t, const std::string& param, int64_t v, int threads) {
  const int64_t a = t.dims[0], b = t.dims[1], c = t.dims[2];
  // 0 below the entry split (a class-mate splits by entries): the kernel's built-in channel block.
  if (t.kernel == "kv_compress.bwd" && v == 0 && !kv_backward_by_entries(a, b, c)) v = kernels::builtin::kKvChannelBlock;
  // By entries: one pool run, a job per thread (one thread: the caller alone); the entries it
  // hands out one at a time are job_work's units (the imbalance), not pool jobs.
  if (t.kernel == "kv_compress.bwd" && v == 0) return double(std::max(threads, 1));
  if (t.kernel == "kv_compress.fwd" && v == 0) return double(std::max(threads, 1));  // kv_forward_by_entries
  if (t.kernel == "rope.fwd") return double(ceil_div(a, std::max<int64_t>(1, v / (b * c))));
  // The forward hands the pool (entry, channel block) items in chunks of 16, ratio 4 64
  // (kernels::compressor_forward_chunk_items), so a job is that many items.
  if (t.kernel == "kv_compress.fwd")
    return double(ceil_div(kernels::compressor_entries(a, int(c)) * ceil_div(b, v), kernels::compressor_forward_chunk_items(int(c))));
  // Ratio 4 (backward_r4_chunks, session 22): items of one chunk of 64 entries x one channel
  // block (untuned: one block of every channel); other ratios: the channel blocks.
  if (t.kernel == "kv_compress.bwd" && c == 4) return double(ceil_div(kernels::compressor_entries(a, 4), kernels::kCompressorR4ChunkEntries) * ceil_div(b, v));
  if (t.kernel == "kv_compress.bwd") return double(ceil_div(b, v));
  if (param == "column_block") return double(ceil_div(b * c, v));
  if (param == "chunks") return double(ceil_div(a, ceil_div(a, std::min(v, a))));
  // The forward's pieces (sparse_attention_forward_split: each a tokens() run and a counter
  // fetch, kAttentionPieceSeconds each), handed out inside one pool run of a job per thread.
  if (param == "query_block") return double(kernels::sparse_attention_forward_split(a, kAttentionWindow, v).pieces());
  return double(ceil_div(a, v));  // block_tokens
}

// Keys a sparse attention query at position t scores in the timed case (kernel_suite_cases.cc
// make_cases_at: window 64; ratio 4: the top min(64, tokens / 4) of the (t + 1) / 4 visible
// entries, the model's CSA layer; ratio 128: every one of the (t + 1) / 128 visible entries,
// HCA; ratio 0: the window only): its work grows with t until every part is full, so equal token
// blocks are not equal jobs.
double attention_keys(int64_t tokens, int64_t t, int64_t ratio) {
  const int64_t win = std::min<int64_t>(kAttentionWindow, t + 1);
  if (ratio == 0) return double(win);
  if (ratio == 128) return double(win + (t + 1) / 128);
  const int64_t top = std::min<int64_t>(64, std::max<int64_t>(1, tokens / 4));
  return double(win + std::min<int64_t>(top, (t + 1) / 4));
}

// The work of each parallel job under a parameter value, in the order the pool hands them out,
// where jobs differ; empty where every job is alike (the sparse attention forward's schedule is
// attention_forward_imbalance). Sparse attention's backward (sparse_attention.cc): chunks of
// ceil(tokens / chunks) tokens (plan_with), handed out last first.
std::vector<double> job_work(const TuneTarget& t, const std::string& param, int64_t v) {
  std::vector<double> w;
  // The kv_compress forward's split by entries hands whole entries (equal work) one at a time to
  // whichever thread is free: the imbalance of n equal units, not of its per-thread pool jobs.
  // (The backward from statistics gives each thread an equal range of every entry's rows: equal
  // jobs, no imbalance.)
  if (v == 0 && t.kernel == "kv_compress.fwd" && kv_forward_by_entries(t.dims[0], t.dims[2]))
    return std::vector<double>(size_t(kernels::compressor_entries(t.dims[0], int(t.dims[2]))), 1.0);
  if (t.kernel != "sparse_attention.bwd" || param != "chunks") return w;
  const int64_t a = t.dims[0], ratio = attention_ratio(t);
  const int64_t len = ceil_div(a, std::min(std::max<int64_t>(v, 1), a));
  for (int64_t t0 = 0; t0 < a; t0 += len) {
    double sum = 0;
    for (int64_t q = t0; q < std::min(a, t0 + len); ++q) sum += attention_keys(a, q, ratio);
    w.push_back(sum);
  }
  std::reverse(w.begin(), w.end());
  return w;
}

// Each thread's keys scored in one sparse attention forward under query_block v at `threads`
// threads: the kernel's split (kernels::sparse_attention_forward_split) and each thread's order of
// blocks (kernels::SparseAttnForwardWalk, the function the kernel walks; sparse_attention.h states
// it) played out with a token's time its keys (attention_keys), the thread with the least work so
// far acting next (ties: the lower thread), every thread's first block claimed first, in thread
// order. A thread takes pieces of its walk's block until none is left, then moves on. Where
// the blocks are many the threads end within a piece of each other; a block or two per thread
// leaves the causal growth of the work (a later block scores more keys) in the imbalance.
std::vector<double> attention_forward_schedule(const TuneTarget& t, int64_t v, int threads) {
  const int64_t a = t.dims[0], ratio = attention_ratio(t), T = std::max(threads, 1);
  const kernels::SparseAttnForwardSplit sp = kernels::sparse_attention_forward_split(a, kAttentionWindow, v);
  const int64_t n = sp.blocks;
  std::vector<double> prefix(size_t(a) + 1, 0.0);  // keys of tokens [0, t)
  for (int64_t q = 0; q < a; ++q) prefix[size_t(q) + 1] = prefix[size_t(q)] + attention_keys(a, q, ratio);
  std::vector<int64_t> taken(size_t(n), 0);
  std::vector<char> claimed(size_t(n), 0);
  auto claim = [&](int64_t from) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t b = (from + i) % n;
      if (!claimed[size_t(b)]) {
        claimed[size_t(b)] = 1;
        return b;
      }
    }
    return n;
  };
  // A piece of block b, if one is left: its keys added to *busy.
  auto take = [&](int64_t b, double* busy) {
    const int64_t t0 = sp.block_begin(b) + taken[size_t(b)];
    if (t0 >= sp.block_end(b)) return false;
    taken[size_t(b)] += sp.piece;
    *busy += prefix[size_t(std::min(sp.block_end(b), t0 + sp.piece))] - prefix[size_t(t0)];
    return true;
  };
  // The kernel's walk (kernels::SparseAttnForwardWalk), every thread's first claim first.
  std::vector<kernels::SparseAttnForwardWalk> walk(size_t(T), kernels::SparseAttnForwardWalk{n});
  std::vector<double> busy(size_t(T), 0.0);
  for (int64_t i = 0; i < T; ++i) walk[size_t(i)].begin(sp, i, T, claim);
  for (auto& w : walk) w.claim_after(claim);
  std::vector<char> done(static_cast<size_t>(T), 0);
  for (int64_t left = T; left > 0;) {
    int64_t i = -1;
    for (int64_t k = 0; k < T; ++k)
      if (!done[size_t(k)] && (i < 0 || busy[size_t(k)] < busy[size_t(i)])) i = k;
    kernels::SparseAttnForwardWalk& w = walk[size_t(i)];
    if (const int64_t b = w.block(); b >= n) {
      done[size_t(i)] = 1;
      --left;
    } else if (!take(b, &busy[size_t(i)])) {
      w.next(claim);
    }
  }
  return busy;
}

// Floats of the backward's workspace a call zeroes and reduces under a chunk count
// (sparse_attention.cc): each chunk's private key-gradient slice, window - 1 rows more than its
// tokens, the compressed rows below the chunk's largest index (since 8692b1c; at most the
// entries visible to its last token, (thi) / ratio), and the sink's H partials. A count whose
// slices would need more than the built-in's allocation runs the built-in plan (plan_chunks).
double attention_workspace_floats(const TuneTarget& t, int64_t chunks) {
  const int64_t a = t.dims[0], H = t.dims[1], hd = t.dims[2], ratio = attention_ratio(t);
  const int64_t n_comp = ratio ? a / ratio : 0;
  auto plan = [&](int64_t want, int64_t* len) {
    const int64_t c = std::min<int64_t>(want, a);
    *len = ceil_div(a, c);
    return ceil_div(a, *len);
  };
  int64_t len = 0, blen = 0;
  int64_t c = plan(chunks, &len);
  const int64_t bc = plan(kernels::builtin::kAttnBwdChunks, &blen);
  if (c * ((len + kAttentionWindow - 1 + n_comp) * hd + H) > bc * ((blen + kAttentionWindow - 1 + n_comp) * hd + H)) {
    c = bc;
    len = blen;
  }
  double floats = 0;
  for (int64_t k = 0; k < c; ++k) {
    const int64_t thi = std::min(a, (k + 1) * len);
    const int64_t rows = ratio ? std::min(n_comp, thi / ratio) : 0;
    floats += double((len + kAttentionWindow - 1 + rows) * hd + H);  // win_rows for every chunk
  }
  return floats;
}

// The pool's makespan over the even split (>= 1): ThreadPool::parallel_for hands the jobs out in
// index order, each to the first thread that is free (list scheduling). For equal jobs this is
// ceil(jobs / threads) x threads / jobs.
double imbalance_of(const std::vector<double>& work, int threads) {
  std::vector<double> busy(size_t(std::max(threads, 1)), 0.0);
  double total = 0;
  for (double x : work) {
    *std::min_element(busy.begin(), busy.end()) += x;
    total += x;
  }
  return total > 0 ? *std::max_element(busy.begin(), busy.end()) * double(busy.size()) / total : 1.0;
}

}  // namespace

ScopedEveryPath::ScopedEveryPath() : previous_(g_every_path) { g_every_path = true; }
ScopedEveryPath::~ScopedEveryPath() { g_every_path = previous_; }

size_t TuneTarget::size() const {
  size_t n = 1;
  for (const SpaceParam& p : space) n *= p.values.size();
  return n;
}

Config TuneTarget::config_at(const std::vector<int>& index) const {
  Config c;
  for (size_t i = 0; i < space.size(); ++i) c[space[i].name] = space[i].values[size_t(index[i])];
  return c;
}

std::vector<int> TuneTarget::index_of(const Config& c) const {
  std::vector<int> idx;
  for (const SpaceParam& p : space) {
    int best = 0;
    auto it = c.find(p.name);
    if (it != c.end()) {
      for (size_t v = 0; v < p.values.size(); ++v)
        if (std::llabs(p.values[v] - it->second) < std::llabs(p.values[size_t(best)] - it->second))
          best = int(v);
    }
    idx.push_back(best);
  }
  return idx;
}

std::string TuneTarget::shape_text() const {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

static std::string dims_meaning(const std::string& kernel) {
  if (kernel == "gemm") return "MxNxK";
  if (kernel == "rope.fwd") return "TOKENSxHEADSxHEAD_DIM";
  if (kernel.rfind("sparse_attention.", 0) == 0) return "TOKENSxHEADSxHEAD_DIM[xRATIO]";
  if (kernel.rfind("kv_compress.", 0) == 0) return "TOKENSxHEAD_DIMxRATIO";
  if (is_mhc(kernel)) return "TOKENSxSTREAMSxD";
  return "ROWSxCOLS";
}

std::vector<int64_t> parse_shape(const std::string& kernel, const std::string& text) {
  const size_t want = kernel == "gemm" || is_work_split(kernel) ? 3 : 2;
  // Sparse attention may name the layer's compression ratio as a fourth dimension (0: the window
  // only, 4: CSA, 128: HCA; 4 when left out). The kernels look their tuning up by tokens, heads
  // and head_dim alone, so one entry serves all three kinds of layer (see make_target).
  const bool attention = kernel.rfind("sparse_attention.", 0) == 0;
  if (text.empty()) {  // the suite's benchmark shapes; the work-split kernels at v4-micro's
    if (kernel == "gemm") return {1024, 1024, 1024};
    if (kernel == "cross_entropy") return {512, 32768};
    if (kernel == "rope.fwd" || kernel.rfind("sparse_attention.", 0) == 0) return {2048, 8, 128};
    if (kernel.rfind("kv_compress.", 0) == 0) return {2048, 128, 4};
    if (is_mhc(kernel)) return {2048, 4, 512};
    return {4096, 4096};
  }
  std::vector<int64_t> dims;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    if (part.empty() || part.size() > 8 || part.find_first_not_of("0123456789") != std::string::npos)
      throw InputError::field("--shape", "'" + text + "' is not a shape (sizes joined by x, e.g. 512x512x512)");
    int64_t v = std::stoll(part);
    if (attention && dims.size() == 3) {
      if (v != 0 && v != 4 && v != 128)
        throw InputError::field("--shape", kernel + ": ratio " + part + " is not 0, 4 or 128");
      dims.push_back(v);
      continue;
    }
    if (v < 1 || v > (int64_t(1) << 20))
      throw InputError::field("--shape", "dimension " + part + " outside 1..1048576");
    dims.push_back(v);
  }
  if (attention && dims.size() == 4 && dims[3] == 4) dims.pop_back();  // the default: one name
  if (dims.size() != want && !(attention && dims.size() == 4))
    throw InputError::field("--shape", kernel + " takes " + std::to_string(want) + " dimensions (" +
                                           dims_meaning(kernel) + "), got '" + text + "'");
  if (kernel.rfind("kv_compress.", 0) == 0 && (dims[2] < 2 || dims[2] > 1024))
    throw InputError::field("--shape", kernel + ": ratio " + std::to_string(dims[2]) + " outside 2..1024");
  if (is_mhc(kernel) && dims[1] > kernels::kMhcMaxStreams)
    throw InputError::field("--shape", kernel + ": at most " + std::to_string(kernels::kMhcMaxStreams) + " streams");
  if (kernel == "rope.fwd" && dims[2] < 2) throw InputError::field("--shape", "rope.fwd: head_dim below 2");
  return dims;
}

TuneTarget make_target(const std::string& kernel, const std::vector<int64_t>& dims,
                       const AuraHardware& hw, const std::string& dtype) {
  if (kernels::params_of(kernel).empty()) {
    std::string names;
    for (const std::string& k : kernels::tunable_kernels()) names += (names.empty() ? "" : ", ") + k;
    throw InputError::field(kernel, "not a tunable kernel (one of: " + names + ")");
  }
  if (dtype != "fp32" && dtype != "bf16") throw InputError::field("--dtype", "fp32 or bf16, not " + dtype);
  if (dtype == "bf16" && (kernel == "gemm" || kernel == "cross_entropy" || kernel.rfind("kv_compress.", 0) == 0))
    throw InputError::field("--dtype", kernel + " is tuned on fp32 storage only");
  TuneTarget t;
  t.kernel = kernel;
  // The storage the caller asks for, fp32 by default: the model runs every tunable kernel on fp32
  // activations (mHC's streams included: model/transformer.cc), so that is what a tune of the
  // model's shapes measures. Until session 7 mHC was always tuned in bf16, the suite's other
  // case, whose blocks need not be the fp32 kernel's best.
  t.dtype = dtype;
  t.dims = dims;
  if (dims.size() > 3 && (kernel.rfind("sparse_attention.", 0) != 0 || dims.size() != 4 ||
                          (dims[3] != 0 && dims[3] != 4 && dims[3] != 128)))
    throw InputError::field("--shape", kernel + ": takes " + dims_meaning(kernel));
  t.shape_class = kernels::shape_class(dims);
  if (kernel == "gemm") {
    const int64_t m = dims[0], n = dims[1], k = dims[2];
    kernels::GemmBlocking g = kernels::derive_gemm_blocking(core::best_isa(), caches_of(hw));
    std::vector<int64_t> kc, mc, nc;
    for (int64_t v : {64, 128, 256, 384, 512})
      if (v <= std::max<int64_t>(k, 64) + 63) kc.push_back(v);
    kc.push_back(std::min<int64_t>(g.kc, std::max<int64_t>(8, (k + 7) / 8 * 8)));
    for (int64_t f : {4, 8, 16, 24}) mc.push_back(f * g.mr);
    mc.push_back(g.mc);
    for (int64_t v : {256, 512, 1024, 2048}) nc.push_back(v);
    nc.push_back(g.nc);
    auto cap = [](std::vector<int64_t> v, int64_t limit, int64_t unit) {
      std::vector<int64_t> out;
      for (int64_t x : v) out.push_back(std::min(x, std::max(unit, ceil_div(limit, unit) * unit)));
      return sorted_unique(out);
    };
    t.space.push_back({"kc", sorted_unique(kc), k, {k}});
    t.space.push_back({"mc", cap(mc, m, g.mr), ceil_div(m, g.mr) * g.mr, {m}});
    t.space.push_back({"nc", cap(nc, n, g.nr), ceil_div(n, g.nr) * g.nr, {n}});
    t.space.push_back({"split", {1, 2}});
    std::vector<int64_t> uk;
    if (core::isa_supported(core::Isa::kAvx2)) uk.push_back(2);
    if (core::isa_supported(core::Isa::kAvx512)) uk.push_back(3);
    if (uk.empty()) uk.push_back(1);
    t.space.push_back({"ukernel", uk});
    t.bytes_in = 4.0 * double(m * k + k * n);
    t.bytes_out = 4.0 * double(m * n);
    t.flops = 2.0 * double(m) * double(n) * double(k);
    return t;
  }
  if (is_work_split(kernel)) {
    const int64_t a = dims[0], b = dims[1], c = dims[2];
    const double sz = t.dtype == "bf16" ? 2 : 4;
    auto values = [&](std::vector<int64_t> v, int64_t cap, int64_t unit) {
      for (int64_t& x : v) x = std::min(x, std::max(unit, ceil_div(cap, unit) * unit));
      return sorted_unique(v);
    };
    if (kernel == "rope.fwd") {
      t.space.push_back({"block_elems", {2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144}, 0, {b * c, a * b * c}});
      t.bytes_in = t.bytes_out = sz * double(a * b * c);
      t.flops = 0;  // elementwise (the suite counts no contraction FLOPs)
    } else if (kernel.rfind("kv_compress.", 0) == 0) {
      // The ratio-4 backward's built-in, one block of the whole head, is a point of its space at
      // any head dim (session 24; above 512 it was not).
      std::vector<int64_t> blocks{8, 16, 32, 64, 128, 256, 512};
      if (kernel == "kv_compress.bwd" && c == 4) blocks.push_back(b);
      t.space.push_back({"channel_block", values(blocks, b, 8), 0, {b}});
      if (kernel == "kv_compress.fwd" && kv_forward_by_entries(a, c))
        t.space.back().values.insert(t.space.back().values.begin(), 0);
      else if (kernel == "kv_compress.bwd" && kv_backward_by_entries(a, b, c))
        t.space.back().values.insert(t.space.back().values.begin(), 0);
      else if (kernel == "kv_compress.bwd" && kv_class_by_entries(a, b, c))
        t.space.back().values = {0};  // see kv_class_by_entries: any block would slow a class-mate
      const double C = double(kernels::compressor_width(int(c), b)), n = double(kernels::compressor_entries(a, int(c)));
      const double fwd_in = 4.0 * (2 * double(a) * C + double(c) * C), k_out = 4.0 * n * double(b);
      t.bytes_in = kernel == "kv_compress.fwd" ? fwd_in : fwd_in + k_out;
      t.bytes_out = kernel == "kv_compress.fwd" ? k_out : fwd_in;
      t.flops = 0;
    } else if (kernel.rfind("sparse_attention.", 0) == 0) {
      const int64_t ratio = attention_ratio(t), n_comp = ratio ? a / ratio : 0;
      // Keys scored: ratio 4 as before (session 12) every query full, a (64 + top) (the saved
      // tables replay with the same busy time); ratios 0 and 128, whose compressed part never
      // fills, the exact sum over the queries.
      double keys = double(a) * (64.0 + double(std::min<int64_t>(64, std::max<int64_t>(1, a / 4))));
      if (ratio != 4) {
        keys = 0;
        for (int64_t q = 0; q < a; ++q) keys += attention_keys(a, q, ratio);
      }
      const double nq = double(a * b * c), kv_bytes = double(a * c) + double(n_comp * c);
      if (kernel == "sparse_attention.fwd") {
        t.space.push_back({"query_block", values({1, 2, 4, 8, 16, 32, 64, 128}, a, 1), 0, {a}});
        t.bytes_in = sz * (nq + kv_bytes);
        t.bytes_out = sz * nq + 4.0 * double(a * b);
        t.flops = 4.0 * double(b * c) * keys;
      } else {  // q, o, d_o, keys in; dq, dkeys out; scores again, dp, dq, dkey (kernel's count)
        t.space.push_back({"chunks", values({1, 2, 4, 8, 12, 16}, a, 1)});
        t.bytes_in = sz * (3 * nq + kv_bytes) + 4.0 * double(a * b);
        t.bytes_out = sz * (nq + kv_bytes);
        t.flops = 10.0 * double(b * c) * keys;
      }
    } else {  // mHC: a tokens, b streams, c = d
      const bool by_tokens = (kernel == "mhc.pre_bwd" || kernel == "mhc.head_bwd") && !g_every_path &&
                             kernels::mhc_backward_runs_by_tokens(a, hw.threads);
      if (by_tokens) {
        // The token path (mhc.cc backward_by_tokens): 256-token chunks, grain one chunk, stage 2
        // per group of tokens; neither parameter is read, so the space is the built-in's point
        // (the kernels' reading of these parameters is the only thing a tuning can change).
        t.fixed = "runs by 256-token chunks (AVX-512 rows, " + std::to_string((a + 255) / 256) + " chunks for " +
                  std::to_string(std::max(1, hw.threads)) + " threads): block_tokens and column_block are not read";
        t.space.push_back({"block_tokens", {kernels::builtin::value(kernel, "block_tokens")}, 0, {a}});
        t.space.push_back({"column_block", {kernels::builtin::value(kernel, "column_block")}, 0, {b * c}});
      } else {
        t.space.push_back({"block_tokens", values({1, 2, 4, 8, 16, 32, 64, 128}, a, 1), 0, {a}});
        if (kernel == "mhc.pre_bwd" || kernel == "mhc.head_bwd")
          t.space.push_back({"column_block", values({64, 128, 256, 512, 1024, 2048}, b * c, 8), 0, {b * c}});
      }
      const double xb = sz * double(a * b * c), yb = sz * double(a * c), R = double((b + 2) * b);
      if (kernel == "mhc.pre_fwd") { t.bytes_in = xb; t.bytes_out = yb; t.flops = 2 * R * double(a * b * c); }
      if (kernel == "mhc.pre_bwd") { t.bytes_in = xb + yb; t.bytes_out = xb; t.flops = 6 * R * double(a * b * c); }
      if (kernel == "mhc.post_fwd") { t.bytes_in = xb + yb; t.bytes_out = xb; t.flops = 2.0 * double(a * b * (b + 1) * c); }
      if (kernel == "mhc.post_bwd") { t.bytes_in = 2 * xb + yb; t.bytes_out = xb + yb; t.flops = 4.0 * double(a * b * (b + 1) * c); }
      if (kernel == "mhc.head_fwd") { t.bytes_in = xb; t.bytes_out = yb; t.flops = 4.0 * double(a * b * c) * double(b); }
      if (kernel == "mhc.head_bwd") { t.bytes_in = xb + yb; t.bytes_out = xb; t.flops = 8.0 * double(a * b * c) * double(b); }
    }
    // The class the kernels look the entry up by: sparse attention's ratio is not part of it.
    t.shape_class = kernels::shape_class(std::vector<int64_t>(dims.begin(), dims.begin() + 3));
    return t;
  }
  const int64_t rows = dims[0], cols = dims[1];
  const double n = double(rows) * double(cols), sz = dtype == "bf16" ? 2 : 4;
  t.space.push_back({"block_elems", {2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144}, 0, {cols, rows * cols}});
  if (kernel == "cross_entropy") t.space.push_back({"vocab_tile", {0, 1024, 2048, 4096, 8192, 16384}, 0, {cols}});
  else t.space.push_back({"stream", {1, 2}});
  if (kernel == "rmsnorm.fwd") {
    t.bytes_in = n * sz;
    t.bytes_out = n * sz;
  } else if (kernel == "swiglu.fwd") {
    t.bytes_in = 2 * n * sz + 4.0 * rows;
    t.bytes_out = n * sz;
  } else if (kernel == "swiglu.bwd") {
    t.bytes_in = 3 * n * sz + 4.0 * rows;
    t.bytes_out = 2 * n * sz + 4.0 * rows;
  } else {  // cross_entropy
    t.bytes_in = n * 4 + 4.0 * rows;
    t.bytes_out = n * 4 + 4.0 * rows;
  }
  return t;
}

int64_t builtin_value(const TuneTarget& t, const std::string& param) {
  // The row kernels' block by the call's shape (RoPE's rows: tokens of heads x head_dim).
  if (param == "block_elems" && t.dims.size() >= 2)
    return kernels::builtin::row_block_elems(
        t.dims[0], t.kernel == "rope.fwd" && t.dims.size() >= 3 ? t.dims[1] * t.dims[2] : t.dims[1]);
  if (t.kernel == "kv_compress.fwd" && param == "channel_block" && t.dims.size() == 3 && kv_forward_by_entries(t.dims[0], t.dims[2]))
    return 0;  // whole entries, what the kernel runs untuned
  if (t.kernel != "kv_compress.bwd" || param != "channel_block") return kernels::builtin::value(t.kernel, param);
  if (t.dims.size() != 3) return kernels::builtin::kKvChannelBlock;
  // The split by entries is what the kernel runs untuned there; where a class-mate splits by
  // entries, 0 is the only point (the channel block of 64 here).
  if (kv_class_by_entries(t.dims[0], t.dims[1], t.dims[2])) return 0;
  // Ratio 4: one block of the whole head, which the space holds rounded up to its multiple of 8
  // (make_target; [300, 17, 4]: 24, one block as the kernel's 17).
  const int64_t v = kernels::builtin::kv_backward_channel_block(t.dims[1], t.dims[2]);
  return t.dims[2] == 4 ? ceil_div(v, 8) * 8 : v;
}

Config builtin_config(const TuneTarget& t, const AuraHardware& hw) {
  if (t.kernel == "gemm") {
    kernels::GemmBlocking g = kernels::derive_gemm_blocking(core::best_isa(), caches_of(hw));
    Config c{{"kc", std::min<int64_t>(g.kc, std::max<int64_t>(8, (t.dims[2] + 7) / 8 * 8))},
             {"mc", std::min<int64_t>(g.mc, ceil_div(t.dims[0], g.mr) * g.mr)},
             {"nc", std::min<int64_t>(g.nc, ceil_div(t.dims[1], g.nr) * g.nr)},
             {"split", kernels::builtin::gemm_splits_rows(t.dims[0], t.dims[1], g.mr, g.nr, hw.threads) ? 1 : 2},
             {"ukernel", g.isa == core::Isa::kAvx512 ? 3 : g.isa == core::Isa::kAvx2 ? 2 : 1}};
    return t.config_at(t.index_of(c));
  }
  if (is_work_split(t.kernel)) {
    Config c;
    for (const SpaceParam& p : t.space) c[p.name] = builtin_value(t, p.name);
    return t.config_at(t.index_of(c));
  }
  // The kernels' stream test is per output tensor (rows x cols elements of the storage type).
  const int64_t elem = t.dtype == "bf16" ? 2 : 4;
  const bool streams = kernels::builtin::streams_by_size(t.dims[0] * t.dims[1] * elem) && (t.dims[1] * elem) % 32 == 0;
  Config c{{"block_elems", builtin_value(t, "block_elems")}, {"stream", streams ? 2 : 1}};
  if (t.kernel == "cross_entropy") c = {{"block_elems", builtin_value(t, "block_elems")}, {"vocab_tile", 0}};
  return t.config_at(t.index_of(c));
}

ChoiceProblem performance_model(const TuneTarget& t, const AuraHardware& hw) {
  ChoiceProblem pr;
  const double threads = std::max(1, hw.threads);
  for (const SpaceParam& sp : t.space) {
    ChoiceParam cp;
    cp.name = sp.name;
    cp.values = sp.values;
    cp.cost.assign(sp.values.size(), 0);
    cp.forbidden.assign(sp.values.size(), false);
    cp.pipe.assign(sp.values.size(), -1);
    pr.params.push_back(cp);
  }
  auto values = [&](const char* name) { return t.space[size_t(param_index(t, name))].values; };
  if (t.kernel == "gemm") {
    pr.pipes = {"fma", "load"};
    pr.pipe_constant = {0, 0};
    const double m = double(t.dims[0]), n = double(t.dims[1]), k = double(t.dims[2]);
    const int ikc = param_index(t, "kc"), imc = param_index(t, "mc"), inc = param_index(t, "nc"),
              isp = param_index(t, "split"), iuk = param_index(t, "ukernel");
    const std::vector<int64_t> KC = values("kc"), MC = values("mc"), NC = values("nc"),
                               SP = values("split"), UK = values("ukernel");
    int mr0, nr0;
    tile_of(0, hw.isa, mr0, nr0);
    // fma: per ukernel (its peak and its edge padding); imbalance per split, at the widest tile.
    for (size_t u = 0; u < UK.size(); ++u) {
      int mr, nr;
      tile_of(UK[u], hw.isa, mr, nr);
      double peak = UK[u] == 3 || (UK[u] != 2 && hw.isa != "avx512") ? hw.peak_flops : hw.peak_avx2;
      if (UK[u] == 1) peak = hw.peak_avx2 / 8;
      // 6 x 16 beside 12 x 32 (an AVX-512 machine) runs at most kNarrowTileShareOfWide of the
      // wide tile's rate, whatever the probe's AVX2 loop says (see the constant).
      if (UK[u] == 2 && hw.isa == "avx512") peak = std::min(peak, kNarrowTileShareOfWide * hw.peak_flops);
      double padded = double(ceil_div(t.dims[0], mr) * mr) * double(ceil_div(t.dims[1], nr) * nr);
      pr.params[size_t(iuk)].cost[u] = t.flops / peak * padded / (m * n);
      pr.params[size_t(iuk)].pipe[u] = 0;
    }
    // Threading (gemm.cc since 981268b): each thread runs the serial loops on its own contiguous
    // part of C, MR panels (split 1) or NR slivers (split 2) of the chosen micro-kernel dealt out
    // evenly, so the largest part has ceil(units / threads) units (pair split, ukernel).
    const int64_t nt = int64_t(threads);
    auto units_of = [&](int64_t split, int64_t ukernel) {
      int mr, nr;
      tile_of(ukernel, hw.isa, mr, nr);
      return split == 1 ? ceil_div(t.dims[0], mr) : ceil_div(t.dims[1], nr);
    };
    for (size_t s = 0; s < SP.size(); ++s) {
      for (size_t u = 0; u < UK.size(); ++u) {
        const double units = double(units_of(SP[s], UK[u]));
        const double imb = std::ceil(units / threads) * threads / units;
        if (imb > 1) pr.pairs.push_back({isp, int(s), iuk, int(u), (imb - 1) * pr.params[size_t(iuk)].cost[u], false, -1});
      }
      // The row split packs all of B on every thread: (threads - 1) B packings more than the
      // column split, whose threads pack their own columns of B.
      pr.params[size_t(isp)].cost[s] = SP[s] == 1 ? (threads - 1) * 8 * k * n / hw.bw_mem : 0;
      pr.params[size_t(isp)].pipe[s] = -1;
    }
    const double bw_l2 = hw.bw_l2 * threads, bw_l3 = hw.bw_l3 * threads;
    // The rows of C an A block actually holds: gemm.cc deals a part's MR panels out into
    // ceil(panels / (MC / MR)) blocks of equal size, so a block holds at most MC rows and fewer
    // where MC does not divide the part. The larger part is all of m (the column split, or one
    // thread); the row split's smaller parts hold at most as many. gemm.cc packs with the chosen
    // micro-kernel's MR, but a pair has room for only (mc, kc), so this counts the widest
    // micro-kernel's MR (ukernel 0): on AVX-512, 6 x 16's blocks can hold up to 6 rows fewer
    // (2048 rows at mc 120: 114, not 120). Checked on the tables' GEMM spaces (m 128, 2048; every
    // mc and kc; L2 1 MiB): no level test changes by it.
    auto a_block_rows = [&](int64_t mc) {
      const int64_t panels = ceil_div(t.dims[0], mr0), per_block = std::max<int64_t>(1, mc / mr0);
      return ceil_div(panels, ceil_div(panels, per_block)) * mr0;
    };
    for (size_t a = 0; a < KC.size(); ++a) {
      // C tiles once per depth block.
      pr.params[size_t(ikc)].cost[a] = 8 * m * n * double(ceil_div(t.dims[2], KC[a])) / bw_l2;
      pr.params[size_t(ikc)].pipe[a] = 1;
      for (size_t u = 0; u < UK.size(); ++u) {
        int mr, nr;
        tile_of(UK[u], hw.isa, mr, nr);
        // Each micro-kernel call (one MR x NR tile, one depth block) stalls the FMA pipe while
        // it reads and writes its C tile and fills and drains its accumulator chains: a time per
        // 64-byte line of the tile, not hidden under the call's own FMAs.
        // A thread makes ceil(tiles / threads) x ceil(k / KC) calls (pair kc, ukernel).
        const double lines = double(mr) * double(ceil_div(int64_t(nr) * 4, 64));
        const double calls = std::ceil(double(ceil_div(t.dims[0], mr) * ceil_div(t.dims[1], nr)) / threads) *
                             double(ceil_div(t.dims[2], KC[a]));
        pr.pairs.push_back({ikc, int(a), iuk, int(u), calls * lines * hw.gemm_call_line_s, false, 0});
        int ways = std::max(hw.l1_ways, 2);
        if (double((mr + nr) * KC[a] * 4) > double(hw.l1_bytes) * (ways - 1) / ways) {
          double refetch = 4.0 * double(KC[a]) * nr * double(ceil_div(t.dims[0], mr)) *
                           double(ceil_div(t.dims[1], nr)) * double(ceil_div(t.dims[2], KC[a])) / bw_l2;
          pr.pairs.push_back({ikc, int(a), iuk, int(u), refetch, false, 1});
        }
      }
      for (size_t b = 0; b < MC.size(); ++b) {
        bool in_l2 = 4.0 * double(a_block_rows(MC[b])) * double(KC[a]) <= hw.l2_bytes / 2.0;
        double stream = 4 * m * k * double(ceil_div(t.dims[1], nr0)) / (in_l2 ? bw_l2 : bw_l3);
        pr.pairs.push_back({ikc, int(a), imc, int(b), stream, false, 1});
      }
      for (size_t c = 0; c < NC.size(); ++c) {
        if (4.0 * double(KC[a]) * double(NC[c]) > hw.l3_bytes / 2.0) {
          pr.pairs.push_back({ikc, int(a), inc, int(c), 0, true, -1});
          continue;
        }
      }
    }
    // B's slivers are read from L2 once per row block (pair mc, split), and each thread runs the
    // row blocks of its own part of C against its own packed B (gemm.cc gemm_serial): on the row
    // split a thread's part is ceil(panels / threads) MR panels against all n columns, on the
    // column split all m rows against its ceil(slivers / threads) NR slivers. The threads stream
    // at the same time, each from its own L2, so the largest part's traffic at one core's L2
    // bandwidth is the time. (Until session 15 this counted row blocks over all of m at the
    // threads' summed bandwidth: on the row split a block of half of m, one block per thread,
    // was priced as two.) At one thread both splits are the old term.
    for (size_t b = 0; b < MC.size(); ++b) {
      pr.params[size_t(imc)].pipe[b] = 1;
      const int64_t per_block = std::max<int64_t>(1, MC[b] / mr0);  // gemm.cc rounds MC down to MR
      for (size_t s = 0; s < SP.size(); ++s) {
        const int64_t m_panels = ceil_div(t.dims[0], mr0), n_slivers = ceil_div(t.dims[1], nr0);
        const int64_t panels = SP[s] == 1 ? ceil_div(m_panels, nt) : m_panels;
        const double cols = SP[s] == 1 ? n : double(std::min(t.dims[1], ceil_div(n_slivers, nt) * nr0));
        const double blocks = double(ceil_div(panels, per_block));
        pr.pairs.push_back({imc, int(b), isp, int(s), 4 * k * cols * blocks / hw.bw_l2, false, 1});
      }
    }
    // A is packed once per column block of each thread's part (pair nc, split): on the row split
    // every thread packs its rows for each of the ceil(n / NC) blocks (8 m k ceil(n / NC) in all);
    // on the column split every thread packs all of A for each block of its own columns (the
    // slivers' split taken at the widest tile).
    for (size_t c = 0; c < NC.size(); ++c) {
      pr.params[size_t(inc)].pipe[c] = -1;
      for (size_t s = 0; s < SP.size(); ++s) {
        double blocks = double(ceil_div(t.dims[1], NC[c]));
        if (SP[s] != 1) {
          const int64_t units = ceil_div(t.dims[1], nr0);
          blocks = 0;
          for (int64_t th = 0; th < nt; ++th) {
            const int64_t lo = std::min(t.dims[1], units * th / nt * nr0);
            const int64_t hi = std::min(t.dims[1], units * (th + 1) / nt * nr0);
            if (hi > lo) blocks += double(ceil_div(hi - lo, NC[c]));
          }
        }
        pr.pairs.push_back({inc, int(c), isp, int(s), 8 * m * k * blocks / hw.bw_mem, false, -1});
      }
    }
    // Where the model ties (every blocking whose loads stay under the FMA time costs the same),
    // the built-in's value: a move from it needs a predicted gain. A serial cost of 1e-4 of the
    // FMA time per parameter off the built-in, below any difference the terms above resolve.
    // Why (session 15): the FMA pipe hides every kc whose load terms stay under it, and CBC
    // returned kc 64 or 128 by the order of its search; the tables measure them 2-16% slower
    // than 256-512 (the analytic kc is 512), and which one came out changed with unrelated terms.
    {
      const Config builtin = builtin_config(t, hw);
      const double eps = 1e-4 * t.flops / hw.peak_flops;
      for (size_t p = 0; p < t.space.size(); ++p)
        for (size_t v = 0; v < t.space[p].values.size(); ++v)
          if (t.space[p].values[v] != builtin.at(t.space[p].name)) {
            ChoiceParam& cp = pr.params[p];
            if (cp.serial.empty()) cp.serial.assign(cp.values.size(), 0);
            cp.serial[v] += eps;
          }
    }
    // B packed once over the threads (the row split's extra packings are on `split`); one pool job
    // per call where there are threads (gemm.cc runs one thread's call without the pool).
    pr.constant = 8 * k * n / hw.bw_mem + (threads > 1 ? hw.gemm_pool_job_s : 0);
    return pr;
  }
  if (is_work_split(t.kernel)) {
    pr.pipes = {"memory", "vector"};
    const double ws = t.bytes_in + t.bytes_out;
    double bw = hw.bw_mem;
    if (ws <= double(hw.l2_bytes) * threads) bw = hw.bw_l2 * threads;
    else if (ws <= double(hw.l3_bytes)) bw = std::min(hw.bw_l3 * threads, 4 * hw.bw_mem);
    const double t_mem = ws / bw;
    // Elementwise work without contraction FLOPs: about 4 lane-ops per element at 8 lanes.
    const double t_vec = t.flops > 0 ? t.flops / hw.peak_flops : (ws / 4) * 4 / (hw.peak_avx2 / 2);
    pr.pipe_constant = {t_mem, t_vec};
    const double busy = std::max(t_mem, t_vec);
    for (size_t i = 0; i < t.space.size(); ++i) {
      const SpaceParam& sp = t.space[i];
      for (size_t v = 0; v < sp.values.size(); ++v) {
        double jobs = std::max(1.0, jobs_of(t, sp.name, sp.values[v], int(threads)));
        // Unequal jobs (sparse attention's causal key counts) by the pool's schedule (the
        // forward's by its own, attention_forward_schedule), else ceil(jobs / threads) x
        // threads / jobs.
        double imb = 1;
        if (t.kernel == "sparse_attention.fwd") {
          const std::vector<double> busy = attention_forward_schedule(t, sp.values[v], int(threads));
          double total = 0;
          for (double b : busy) total += b;
          imb = total > 0 ? *std::max_element(busy.begin(), busy.end()) * double(busy.size()) / total : 1.0;
        } else {
          const std::vector<double> work = job_work(t, sp.name, sp.values[v]);
          imb = work.empty() ? std::ceil(jobs / threads) * threads / jobs : imbalance_of(work, int(threads));
        }
        // A pool job hw.job_s (1 us); a sparse attention forward piece kAttentionPieceSeconds.
        const double job_s = t.kernel == "sparse_attention.fwd" ? kAttentionPieceSeconds : hw.job_s;
        double cost = jobs * job_s / threads + (imb - 1) * busy;
        if (sp.name == "column_block") cost += jobs * double(ceil_div(t.dims[0], 512)) * 2 * 2e-6 / threads;
        // Where the backward runs from the forward's statistics untuned, a channel block derives
        // them again: its max pass reads zt and its sum pass kt once more from memory (session
        // 28, [8192, 512] ratio 128 on two threads: 2.58 ms in three passes, 1.33 ms in one).
        if (t.kernel == "kv_compress.bwd" && sp.values[v] > 0 && kv_backward_by_entries(t.dims[0], t.dims[1], t.dims[2]))
          cost += 2 * 4.0 * double(t.dims[0]) * double(kernels::compressor_width(int(t.dims[2]), t.dims[1])) / hw.bw_mem;
        if (sp.name == "chunks") {
          // Each chunk zeroes its private key-gradient slice and the reduction reads every slice
          // back, apart from the products (serial): 8 bytes per workspace float at the level
          // the workspace lives in, the threads side by side (ratio 4, 16 chunks at 2048
          // tokens: 3.8 MB since 8692b1c, 5.8 MB before).
          const double wb = 4 * attention_workspace_floats(t, sp.values[v]);
          double wbw = hw.bw_mem;
          if (wb <= double(hw.l2_bytes) * threads) wbw = hw.bw_l2 * threads;
          else if (wb <= double(hw.l3_bytes)) wbw = std::min(hw.bw_l3 * threads, 4 * hw.bw_mem);
          cost += 2 * wb / wbw;
        }
        pr.params[i].cost[v] = cost;
      }
    }
    return pr;
  }
  // Row kernels.
  pr.pipes = {"memory", "vector"};
  const double rows = double(t.dims[0]), cols = double(t.dims[1]);
  const double elems = rows * cols;
  const double in = t.bytes_in, out = t.bytes_out, ws = in + out;
  // The bandwidth of the level a working set of `bytes` lives in across repeated calls, L3
  // holding at most `l3_share` of its size: it is shared with the other cores' work, and on the
  // development VM a 32 MiB set did not stay in its 32 MiB L3 (session 7 tables).
  auto level_bw = [&](double bytes, bool* at_memory, double l3_share) {
    *at_memory = false;
    if (bytes <= double(hw.l2_bytes) * threads) return hw.bw_l2 * threads;
    if (bytes <= double(hw.l3_bytes) * l3_share) return std::min(hw.bw_l3 * threads, 4 * hw.bw_mem);
    *at_memory = true;
    return hw.bw_mem;
  };
  // With normal stores the input and the output stay in L3 up to three quarters of it; with
  // non-temporal stores the input alone up to half of it. The measured bounds (32 MiB L3, sessions
  // 7-14 tables): normal stores keep a 20 MiB set (SwiGLU backward 128x8192, two threads: non-
  // temporal stores 1.00-1.97x slower in all eight tables) and a 24 MiB one (SwiGLU forward
  // 512x4096 and 256x8192, one thread: 1.07-1.08x slower in three of four), not a 32 MiB one
  // (RMSNorm, one thread: 0.77-0.97x in 11 of 12 cells; two threads either way); a 16 MiB input
  // stays with non-temporal stores (RMSNorm 1024x4096 one thread: 0.77x), a 24 MiB one does not
  // (SwiGLU backward 512x4096, one thread: 1.05x slower in three of four). Any one table left out,
  // the others still put the bounds in (24, 32) MiB and (16, 24) MiB. Until session 15 both were
  // half of L3, and the model chose non-temporal stores for SwiGLU backward 128x8192 at two
  // threads (1.98x the best on session 14's idle table).
  bool at_memory = true;
  const double bw_level = level_bw(ws, &at_memory, 0.75);
  // Lane operations per element (exp ~ 20, sigmoid ~ 26 with the reciprocal step).
  double ops = 4;
  if (t.kernel == "swiglu.fwd") ops = 32;
  if (t.kernel == "swiglu.bwd") ops = 44;
  // Cross-entropy (fp32, with its gradient: what a tune times) keeps each exp(x - max) of a whole
  // row in a per-thread row buffer and scales it into the gradient: one exp per logit, max, sum,
  // the gradient's multiply. A tiled row recomputes its exps in the gradient pass (below).
  if (t.kernel == "cross_entropy") ops = 26;
  // Lane-FMAs per second: SwiGLU runs 16 lanes where the CPU has AVX-512 (kernels/swiglu.cc,
  // row_isa()), the others 8.
  const bool wide = hw.isa == "avx512" && t.kernel.rfind("swiglu.", 0) == 0;
  const double lane_rate = wide ? hw.peak_flops / 2 : hw.peak_avx2 / 2;
  pr.pipe_constant = {0, elems * ops / lane_rate};
  const int ib = param_index(t, "block_elems"), is = param_index(t, "stream");
  const std::vector<int64_t> BE = values("block_elems"), ST = is >= 0 ? values("stream") : std::vector<int64_t>{};
  const double t_mem_normal = ws / bw_level;
  if (is < 0) pr.pipe_constant[0] = t_mem_normal;  // no store choice: normal stores
  for (size_t s = 0; s < ST.size(); ++s) {
    double tm = t_mem_normal;
    if (ST[s] == 2) {
      // Non-temporal stores write the output to memory past the caches, so across calls only
      // the input competes for them: it is read from the level that holds `in` alone (normal
      // stores: in + out). At one thread on the development VM that is why they win on RMSNorm
      // (input in L3, 0.75-0.93x of normal stores) and lose on SwiGLU (its inputs are twice its
      // output and do not fit: 1.03-1.13x; session 7). The write itself saves the write-allocate
      // read only where the probe measured that (triad_nt over triad, at the probe's thread
      // count); elsewhere it is charged 2% more than a normal store's (session 6: at one thread
      // they lost on every SwiGLU space while the two-core probe showed triad_nt 1.18x triad).
      const bool credited = hw.nt_gain > 1 && hw.nt_threads > 0 && int(threads) >= hw.nt_threads;
      // A calibration (calibrate.h) may scale the factor (AuraHardware::nt_write_scale, 1 as probed).
      const double write_factor = (credited ? 1 / hw.nt_gain : 1.02) * hw.nt_write_scale;
      bool in_at_memory = true;
      const double bw_in = level_bw(in, &in_at_memory, 0.5);
      tm = in_at_memory ? write_factor * ws / hw.bw_mem : in / bw_in + write_factor * out / hw.bw_mem;
    }
    pr.params[size_t(is)].cost[s] = tm;
    pr.params[size_t(is)].pipe[s] = 0;
  }
  // Where the vector pipe hides the memory pipe under both store kinds, the model cannot rank
  // them and the solver returned either; then the kernel's own choice (streams_by_size: an
  // output of at least 8 MiB) is kept, as GEMM keeps its built-in blocking on a tie: a serial
  // cost of 1e-4 of the call on the other kind (on every row space with a store parameter; it
  // decides only a tie, below any difference the terms above resolve).
  // Session 28 (docs/aura.md, "Row kernels"): SwiGLU forward at one thread on the Zen 4 VM is
  // such a tie (32 lane-ops an element at 58.6 G lane-ops/s: 2.3 ms against 0.98 ms of memory at
  // 1024x4096) and the solver took normal stores, 1.019-1.046x the best on session 27's table
  // and 1.029-1.052x on session 28's, where the kernel's streaming stores are the best on all
  // four shapes of both. Replayed on the saved tables (689 spaces) only those eight starts move.
  if (is >= 0) {
    const int64_t own = builtin_config(t, hw).at("stream");
    const double tie = 1e-4 * std::max(t_mem_normal, pr.pipe_constant[1]);
    ChoiceParam& cp = pr.params[size_t(is)];
    cp.serial.assign(cp.values.size(), 0);
    for (size_t s = 0; s < ST.size(); ++s)
      if (ST[s] != own) cp.serial[s] = tie;
  }
  for (size_t b = 0; b < BE.size(); ++b) {
    double grain = std::max(1.0, std::floor(double(BE[b]) / cols));
    double blocks = std::ceil(rows / grain);
    double imb = std::ceil(blocks / threads) * threads / blocks;
    pr.params[size_t(ib)].cost[b] = blocks * hw.job_s / threads + (imb - 1) * std::max(t_mem_normal, pr.pipe_constant[1]);
  }
  if (t.kernel == "cross_entropy") {
    // The sum-of-exp pass needs its row's (or tile's) maximum, so it starts only when the max
    // pass over that span has finished: it is serial after the first pass, not overlapped with
    // the memory pipe. It reads the span from the level that holds it: L1 for a tile of at most
    // one L1 way (L1 / ways: one line per set, so the tile cannot evict itself and the other
    // ways hold the input streaming in and the gradient's lines), else L2 for a whole row of at
    // most half of L2 (a larger tile is in L2 too, but no tile beats the row there), else memory. The per-tile combine (one scalar exp and a
    // horizontal sum) is a short chain the out-of-order core runs beside the next tile's max
    // loads, which do not depend on it: no cost. (Session 8 tables, one thread: vocab_tile=1024
    // is best or within 0.5% on all five shapes.)
    const int iv = param_index(t, "vocab_tile");
    const std::vector<int64_t> VT = values("vocab_tile");
    const double row_bytes = cols * 4;
    for (size_t v = 0; v < VT.size(); ++v) {
      const bool whole = VT[v] == 0 || double(VT[v]) >= cols;
      double second;
      if (!whole && VT[v] * 4 <= hw.l1_bytes / std::max(hw.l1_ways, 1)) second = elems * 4 / (hw.bw_l1 * threads);
      else if (row_bytes <= hw.l2_bytes / 2.0) second = elems * 4 / (hw.bw_l2 * threads);
      else second = elems * 4 / hw.bw_mem;
      // A tiled row keeps no exps (kernels/cross_entropy.cc: only a whole row fits the buffer's
      // contract), so its gradient pass computes every exp again, after the row's log-sum-exp is
      // known: serial, 20 lane-ops per logit (session 10 tables, one thread: the best tile 1.10-1.50x
      // of the whole row on all five shapes; two threads: within noise, 0.76-2.26x).
      if (!whole) second += elems * 20 / lane_rate;
      pr.params[size_t(iv)].cost[v] = second;
      pr.params[size_t(iv)].pipe[v] = -1;
    }
  }
  return pr;
}

}  // namespace trex::aura
