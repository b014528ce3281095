#include "trex/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "trex/core/bf16.h"
#include "trex/core/bf16_stream.h"
#include "trex/core/thread_pool.h"
#include "trex/dist/step_reducer.h"
#include "trex/model/accounting.h"
#include "trex/model/transformer.h"
#include "trex/optim/adamw.h"
#include "trex/optim/swap_optimizer.h"
#include "trex/train/checkpoint.h"
#include "trex/train/metrics.h"
#include "trex/train/model_record.h"
#include "trex/train/packing.h"
#include "trex/train/plot.h"
#include "trex/util/atomic_file.h"
#include "trex/util/cpu_time.h"
#include "trex/util/error.h"
#include "trex/util/progress.h"

namespace fs = std::filesystem;

namespace trex::train {
namespace {

// The model's whole parameter array from its bf16 weights or back (v4-micro: 80M parameters,
// 320 MB of fp32, far beyond the caches): split over the compute threads, each piece written
// with streaming stores (core/bf16_stream.h: no read of each output line before it is
// written). The same bits as core::fp32_to_bf16 / bf16_to_fp32.
constexpr int64_t kCastPiece = int64_t(1) << 20;  // elements: a multiple of 32, so every piece
                                                  // of a 64-byte aligned array starts aligned
void widen_params(const core::bf16* w, float* params, int64_t n) {
  core::default_thread_pool().parallel_for(0, n, kCastPiece, [&](int64_t lo, int64_t hi) {
    core::bf16_to_fp32_stream(w + lo, params + lo, size_t(hi - lo));
  });
}
void round_params(const float* params, core::bf16* w, int64_t n) {
  core::default_thread_pool().parallel_for(0, n, kCastPiece, [&](int64_t lo, int64_t hi) {
    core::fp32_to_bf16_stream(params + lo, w + lo, size_t(hi - lo));
  });
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Text for the tokenizer: documents in source order, each source's share of sample_bytes in
// proportion to its weight (at least one document each).
std::vector<std::string> tokenizer_sample(const std::vector<Source>& sources, int64_t sample_bytes) {
  double total_w = 0;
  for (const Source& s : sources) total_w += s.spec().weight;
  std::vector<std::string> texts;
  for (const Source& s : sources) {
    int64_t budget = int64_t(double(sample_bytes) * s.spec().weight / total_w);
    int64_t used = 0;
    for (size_t i = 0; i < s.size() && (i == 0 || used < budget); ++i) {
      std::string t = s.text(i);
      if (int64_t(t.size()) > budget - used && i > 0) t.resize(size_t(std::max<int64_t>(budget - used, 0)));
      used += int64_t(t.size());
      if (!t.empty()) texts.push_back(std::move(t));
    }
  }
  return texts;
}

// Parameter groups: consecutive runs of parameters with the same weight-decay flag.
std::vector<optim::ParamGroup> param_groups(const model::ParamLayout& layout, const TrainConfig& c) {
  std::vector<optim::ParamGroup> groups;
  int index = 0;
  for (const model::ParamInfo& p : layout.params) {
    if (groups.empty() || (groups.back().hyper.weight_decay > 0) != p.decay) {
      optim::ParamGroup g;
      g.name = std::string(p.decay ? "decay" : "no_decay") + "." + std::to_string(index++) + "." + p.name;
      g.hyper.lr = float(c.schedule.peak_lr);
      g.hyper.beta1 = float(c.beta1);
      g.hyper.beta2 = float(c.beta2);
      g.hyper.eps = float(c.eps);
      g.hyper.weight_decay = p.decay ? float(c.weight_decay) : 0.0f;
      groups.push_back(g);
    }
    groups.back().size += p.numel;
  }
  // With weight_decay 0 every parameter lands in one group.
  return groups;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The groups cut to the element ranges of the flat range (a rank's ZeRO-1 shard, ascending),
// packed: a group's pieces in several ranges are one group (they are consecutive when packed).
std::vector<optim::ParamGroup> cut_groups(const std::vector<optim::ParamGroup>& groups,
                                          const std::vector<dist::ShardRange>& ranges) {
  std::vector<optim::ParamGroup> out;
  for (const dist::ShardRange& r : ranges) {
    int64_t at = 0;
    for (const optim::ParamGroup& g : groups) {
      const int64_t lo = std::max(r.begin, at), hi = std::min(r.end, at + g.size);
      at += g.size;
      if (hi <= lo) continue;
      if (!out.empty() && out.back().name == g.name) {
        out.back().size += hi - lo;
      } else {
        out.push_back(g);
        out.back().size = hi - lo;
      }
    }
  }
  return out;
}

// The clipping scale from the norm of the last step not skipped (clip_with "previous"): known
// before the backward, so the overlapped swap update can apply it. 1: none (also when there is
// no such step yet: then the step clips with its own norm, see clips_with_own_norm).
float previous_norm_scale(const TrainConfig& c, double last_norm) {
  if (c.clip_with != "previous" || c.clip_norm <= 0 || !(last_norm > c.clip_norm)) return 1.0f;
  return float(c.clip_norm / last_norm);
}

// Whether a step clips with its own norm: always with clip_with "current"; with "previous" when
// no step has finished yet (last_norm 0), so the first update does not put an unclipped
// gradient into Adam's second moment (measured on v4-micro: a first step unclipped at norm 5.8
// left the loss 0.14 higher after 6 steps; docs/optim.md).
bool clips_with_own_norm(const TrainConfig& c, double last_norm) {
  return c.clip_with == "current" || !(last_norm > 0);
}

// FNV-1a over the weights and every score-routed layer's bias.
uint64_t state_fingerprint(model::Transformer& m) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const float* p, int64_t n) {
    const unsigned char* b = reinterpret_cast<const unsigned char*>(p);
    for (int64_t i = 0; i < n * int64_t(sizeof(float)); ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(m.params(), m.layout().total);
  for (int i = 0; i < m.moe_layers(); ++i)
    if (const float* b = m.routing_bias(i)) mix(b, m.config().ffn.routed_experts);
  return h;
}

std::vector<LossPoint> read_loss_points(const std::string& metrics_path) {
  std::vector<LossPoint> pts;
  std::string text;
  try {
    text = read_file(metrics_path);
  } catch (const InputError&) {
    return pts;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    nlohmann::json j = nlohmann::json::parse(text.substr(pos, nl - pos), nullptr, false);
    pos = nl + 1;
    if (!j.is_object()) continue;
    LossPoint p;
    p.step = j.value("step", int64_t(0));
    bool skipped = j.value("skipped", false);
    p.loss = (!skipped && j["loss"].is_number()) ? j["loss"].get<double>() : std::numeric_limits<double>::quiet_NaN();
    pts.push_back(p);
  }
  return pts;
}

}  // namespace

TrainResult run_training(const TrainConfig& config_in, const TrainOptions& options) {
  TrainConfig c = config_in;
  if (options.steps > 0) {
    c.steps = options.steps;
    c.schedule.total = options.steps;
  }
  if (options.out_dir.empty()) throw InputError::field("--out", "must not be empty");
  dist::Context single;
  dist::Context& ctx = options.dist ? *options.dist : single;
  if (!options.dist) {
    // One process: a [parallel] section must describe one rank.
    dist::LayoutRequest request;
    request.dp = c.dp, request.ep = c.ep, request.etp = c.etp;
    (void)dist::resolve_layout(request, 1, c.model, c.micro_batches);
  }
  const bool lead = ctx.rank() == 0;  // writes the run directory and prints
  // The swap update overlapped with the backward: the reducer hands each range of this rank's
  // shard to it once the range's step gradient is summed (StepReducer::stream_round).
  const bool overlap = c.optimizer == "swap" && c.swap_overlap;
  fs::create_directories(options.out_dir);
  const std::string run_dir = options.out_dir;

  // Resume: the checkpoint's state first, so a mismatch is reported before any work.
  std::string ckpt;
  nlohmann::json resume_state = nlohmann::json::object();
  int64_t start_step = 0;
  if (!options.resume.empty()) {
    ckpt = resolve_checkpoint(options.resume);
    resume_state = read_checkpoint_state(ckpt);
    start_step = resume_state.value("step", int64_t(0));
    if (resume_state.value("seq", int64_t(0)) != c.seq || resume_state.value("rows", int64_t(0)) != c.rows ||
        resume_state.value("micro_batches", int64_t(0)) != c.micro_batches ||
        resume_state.value("sources", size_t(0)) != c.data.size())
      throw InputError::field("--resume", ckpt + " was written by a run with another seq, rows, micro_batches or "
                                                 "data sources than " + c.file);
    // Cut and whole packing fill rows differently from the same position. Checkpoints written
    // before run.packing existed were cut.
    const std::string packing = resume_state.value("packing", std::string("cut"));
    if (packing != c.packing)
      throw InputError::field("--resume", ckpt + " was written with run.packing = \"" + packing + "\", " + c.file +
                                              " has packing = \"" + c.packing + "\"");
    // The checkpoint's recorded model must be the one this config builds: a changed model file
    // (rope_dims 16 -> 64 keeps every shape) would load the weights into another computation.
    // (`trex train --resume` without --config has already put the recorded model in c.model:
    // train_command.cc.)
    const std::string state_file = (fs::path(ckpt) / "state.json").string();
    const CheckpointModel resumed = checkpoint_model(recorded_model(resume_state, state_file), c.model,
                                                     c.model_file + " (through " + c.file + ")", GivenModel::kExplicit,
                                                     ckpt, "--resume");
    if (lead && !resumed.warning.empty()) std::fprintf(stderr, "trex: warning: %s\n", resumed.warning.c_str());
  }
  // The weights this run starts from (SFT after CPT): their recorded model may differ from this
  // run's in training-only fields only (model_record.h).
  std::string init;
  if (ckpt.empty() && !c.init_from.empty()) {
    const std::string field = c.file + ": run.init_from";
    try {
      init = resolve_checkpoint(c.init_from);
    } catch (const InputError& e) {
      throw InputError::field(field, e.detail());
    }
    const nlohmann::json init_state = read_checkpoint_state(init);
    const std::string label = c.model_file + " (through " + c.file + ")";
    if (std::optional<model::ModelConfig> recorded =
            recorded_model(init_state, (fs::path(init) / "state.json").string())) {
      const std::string note = check_init_model(*recorded, c.model, init, label, field);
      if (lead && !note.empty()) std::fprintf(stderr, "trex: note: %s\n", note.c_str());
    } else if (lead) {
      std::fprintf(stderr,
                   "trex: warning: %s records no model config (written before checkpoints did); its weights start %s, "
                   "which cannot be checked against them\n",
                   init.c_str(), label.c_str());
    }
  }
  // What every checkpoint records of the model, read once so that the file changing during the
  // run changes nothing. A resumed run records the text its checkpoint recorded (checked above
  // to be this model): the path's file may have changed since.
  nlohmann::json model_config_record;
  if (lead) {
    const auto r = resume_state.find("model_config");  // checked by recorded_model when present
    model_config_record = r != resume_state.end() ? model_record(c.model, (*r)["text"].get<std::string>())
                                                  : model_record(c.model);
  }
  int64_t stop = c.steps;
  if (options.stop_after > 0) stop = std::min(stop, options.stop_after);

  // Data and tokenizer.
  std::vector<Source> sources;
  for (const SourceSpec& s : c.data) sources.push_back(Source::load(s));
  std::unique_ptr<Tokenizer> tok;
  if (!ckpt.empty())
    tok = std::make_unique<Tokenizer>(Tokenizer::load((fs::path(ckpt) / "tokenizer.model").string()));
  else if (!init.empty())
    tok = std::make_unique<Tokenizer>(Tokenizer::load((fs::path(init) / "tokenizer.model").string()));
  else if (!c.tokenizer_file.empty())
    tok = std::make_unique<Tokenizer>(Tokenizer::load(c.tokenizer_file));
  else if (c.tokenizer_data.empty())
    tok = std::make_unique<Tokenizer>(Tokenizer::train(tokenizer_sample(sources, c.tokenizer_sample_bytes), c.tokenizer));
  else {
    std::vector<Source> text;
    for (const SourceSpec& s : c.tokenizer_data) text.push_back(Source::load(s));
    tok = std::make_unique<Tokenizer>(Tokenizer::train(tokenizer_sample(text, c.tokenizer_sample_bytes), c.tokenizer));
  }
  if (tok->vocab_size() > c.model.vocab)
    throw InputError::field("tokenizer", "vocabulary of " + std::to_string(tok->vocab_size()) +
                                             " pieces exceeds the model's vocab " + std::to_string(c.model.vocab));
  if (lead) tok->save((fs::path(run_dir) / "tokenizer.model").string());

  Packer packer(&sources, tok.get(), c.seed, c.seq, c.rows,
                c.packing == "whole"       ? Packer::Mode::kWhole
                : c.packing == "first-fit" ? Packer::Mode::kFirstFit
                                           : Packer::Mode::kCut);
  if (!ckpt.empty())
    packer.restore(DataPosition::from_json(resume_state.at("data"), sources.size(), "state.json: data"));

  // Model and optimizer.
  model::Transformer model(c.model, c.seed, c.mtp);
  if (c.activations == "bf16") model.set_precision(model::Precision::kBf16);
  const int64_t n = model.layout().total;
  if (!init.empty()) model.load((fs::path(init) / "model.safetensors").string());
  // ZeRO-1: each rank's optimizer holds the state of its shard of the parameters only (all of
  // them for one rank; dense ones over every rank, experts over their EDP group: dist/shard_map.h),
  // packed; the reducer hands it that shard's gradient.
  model.set_expert_exchange(ctx.expert_exchange());
  dist::StepReducer reducer(ctx, model);
  const std::vector<dist::ShardRange>& shard = reducer.shard_ranges();
  const int64_t shard_size = reducer.shard_size();
  if (shard_size == 0)
    throw InputError::field("mpirun -n", std::to_string(ctx.world_size()) + " ranks leave rank " +
                                             std::to_string(ctx.rank()) + " no parameters to update (" +
                                             std::to_string(n) + " parameters); use fewer ranks");
  std::vector<optim::ParamGroup> groups = cut_groups(param_groups(model.layout(), c), shard);
  // The shard's fp32 initial values, packed (the optimizer copies them as its master weights).
  std::vector<float> packed_init;
  const float* init_master = model.params() + shard[0].begin;
  if (shard.size() > 1) {
    for (const dist::ShardRange& r : shard) packed_init.insert(packed_init.end(), model.params() + r.begin, model.params() + r.end);
    init_master = packed_init.data();
  }
  std::unique_ptr<optim::Optimizer> opt;
  optim::SwapOptimizer* swap = nullptr;
  optim::AdamW* adamw = nullptr;
  std::string swap_path;
  if (c.optimizer == "swap") {
    std::string dir = c.swap_dir.empty() ? run_dir : c.swap_dir;
    // A killed run leaves its swap file behind; in the run's own directory it is stale. Only
    // rank 0 removes them, before any rank creates its own.
    if (c.swap_dir.empty() && lead)
      for (const fs::directory_entry& e : fs::directory_iterator(run_dir))
        if (e.path().filename().string().rfind("optimizer-", 0) == 0 && e.path().extension() == ".swap")
          fs::remove(e.path());
    ctx.world().barrier("swap file set-up");
    swap_path = (fs::path(dir) / ("optimizer-" + std::to_string(::getpid()) + ".swap")).string();
    fs::remove(swap_path);
    optim::SwapOptions so;
    so.path = swap_path;
    so.chunk_elems = std::min<int64_t>(c.swap_chunk, shard_size);
    so.slots = c.swap_slots;
    so.direct = c.swap_direct;
    auto s = std::make_unique<optim::SwapOptimizer>(groups, init_master, so);
    swap = s.get();
    opt = std::move(s);
  } else {
    auto a = std::make_unique<optim::AdamW>(groups, init_master);
    adamw = a.get();
    opt = std::move(a);
  }
  packed_init = {};
  std::vector<core::bf16> weights(static_cast<size_t>(n));
  // The optimizer writes the shard's bf16 weights here: in place for one range, else packed
  // (gather_weights puts them in place).
  std::vector<core::bf16> packed_weights(shard.size() > 1 ? size_t(shard_size) : 0);
  core::bf16* shard_weights = shard.size() > 1 ? packed_weights.data() : weights.data() + shard[0].begin;
  // One rank updating every parameter (no swap): the step itself writes the new bf16 weights
  // widened into the model's parameters (AdamW::step_and_widen_weights, the same bits), instead
  // of a second pass over all n of them after gather_weights (which has nothing to gather).
  const bool widen_in_step = adamw && ctx.world_size() == 1 && shard.size() == 1 &&
                             shard[0].begin == 0 && shard_size == n;
  std::vector<std::pair<int64_t, int64_t>> shard_pairs;
  for (const dist::ShardRange& r : shard) shard_pairs.push_back({r.begin, r.end});
  if (!ckpt.empty()) {
    model.load((fs::path(ckpt) / "model.safetensors").string());
    opt->load_state_ranges(optimizer_state_pieces(ckpt), shard_pairs);
  } else {
    // The model computes with bf16-rounded weights from the first step; the optimizer keeps
    // the fp32 initialization as its master copy.
    round_params(model.params(), weights.data(), n);
    widen_params(weights.data(), model.params(), n);
  }

  const bool with_mtp = c.mtp && c.model.mtp_depth > 0;
  const double flops_fwd_per_token = model::forward_flops(c.model, c.seq, with_mtp).total();
  const int64_t tokens_per_step = c.seq * c.rows * c.micro_batches;

  const std::string metrics_path = (fs::path(run_dir) / "metrics.jsonl").string();
  std::unique_ptr<MetricsLog> metrics;
  if (lead) metrics = std::make_unique<MetricsLog>(metrics_path, ckpt.empty() ? -1 : start_step);

  core::trace_clear();
  core::trace_enable(true);
  const int trace_thread = core::trace_thread_id();
  int64_t trace_window = core::trace_now_ns();
  core::TraceSummary trace_total;
  std::vector<core::TraceEvent> kept_events;  // all of them when a Chrome trace is wanted
  // Summarizes the spans recorded since trace_window and drops them, so a long run does not
  // hold every span in memory (called between steps, when no span of this thread is open).
  auto fold_trace = [&] {
    int64_t now = core::trace_now_ns();
    std::vector<core::TraceEvent> events = core::trace_collect();
    core::trace_clear();
    core::TraceSummary part = core::summarize_trace(events, trace_thread, trace_window, now);
    trace_total.wall_s += part.wall_s;
    trace_total.idle_s += part.idle_s;
    for (int k = 0; k < core::kTraceCategories; ++k) trace_total.seconds[k] += part.seconds[k];
    if (!options.trace_path.empty()) kept_events.insert(kept_events.end(), events.begin(), events.end());
    trace_window = now;
  };

  int64_t consecutive_bad = resume_state.value("consecutive_skips", int64_t(0));
  double last_norm = resume_state.value("last_grad_norm", 0.0);  // of the last step not skipped
  int64_t skipped_total = resume_state.value("skipped_total", int64_t(0));
  TrainResult result;
  result.first_step = start_step + 1;
  result.last_step = start_step;
  result.vocab_used = tok->vocab_size();
  std::vector<double> step_times, opt_times, swap_io, swap_exposed, swap_hidden;
  std::vector<std::vector<double>> swap_rank_io(size_t(ctx.world_size())), swap_rank_exposed(size_t(ctx.world_size()));
  int64_t swap_redone = 0;
  double run_time = 0;
  int64_t run_tokens = 0;

  std::unique_ptr<ProgressBar> bar;
  if (options.progress && stop > start_step && lead)
    bar = std::make_unique<ProgressBar>("train", stop - start_step, ProgressBar::Mode::kAuto);
  if (options.print && lead && ctx.world_size() > 1)
    std::printf("dist: %s\n", ctx.layout().describe(c.model).c_str());
  if (options.print && lead)
    std::printf("train: %s %s, %lld params, vocab %d (tokenizer %d), seq %lld x %lld rows x %lld micro, steps %lld..%lld, %s\n",
                c.model.name.c_str(), to_string(c.mode), static_cast<long long>(n), c.model.vocab, tok->vocab_size(),
                static_cast<long long>(c.seq), static_cast<long long>(c.rows),
                static_cast<long long>(c.micro_batches), static_cast<long long>(start_step + 1),
                static_cast<long long>(stop), c.optimizer.c_str());
  if (options.print && lead && swap)
    std::printf("swap: %s%s, %lld chunks of %lld, %d slots (%.1f MB resident), %s%s%s\n",
                optim::to_string(swap->backend()), swap->direct() ? " O_DIRECT" : " buffered",
                static_cast<long long>(swap->num_chunks()), static_cast<long long>(swap->chunk_elems()), swap->slots(),
                double(swap->buffer_bytes()) / 1e6,
                overlap ? "updates during the backward" : "updates after the backward",
                swap->fallback_reason().empty() ? "" : "; fallback: ", swap->fallback_reason().c_str());

  std::string last_ckpt;
  for (int64_t step = start_step + 1; step <= stop; ++step) {
    StepMetrics m;
    m.step = step;
    const int64_t step_begin_ns = core::trace_now_ns();
    const double cpu0 = process_cpu_seconds();
    Clock::time_point t0 = Clock::now();

    // The overlapped swap update starts now: its first chunks load during the forward.
    m.lr = c.schedule.lr(step);
    const float pre_scale = previous_norm_scale(c, last_norm);
    const optim::SwapStats swap_before = swap ? swap->total() : optim::SwapStats{};
    if (overlap) {
      for (size_t gi = 0; gi < opt->groups().size(); ++gi) opt->set_lr(gi, float(m.lr));
      swap->begin_step(reducer.gradient(), shard_weights, pre_scale);
    }

    std::vector<model::Batch> batches;
    int64_t counted = 0;
    for (int64_t k = 0; k < c.micro_batches; ++k) {
      batches.push_back(packer.next());
      for (int32_t t : batches.back().targets) counted += t >= 0;
    }
    m.data_s = seconds_since(t0);

    Clock::time_point t1 = Clock::now();
    reducer.begin_step();
    for (int64_t j = 0; j < reducer.rounds(c.micro_batches); ++j) {
      if (step == c.dist_stall_step && ctx.rank() == c.dist_stall_rank)
        for (;;) ::pause();  // debug hook: see config.h
      if (step == c.dist_die_step && ctx.rank() == c.dist_die_rank) ::raise(SIGKILL);  // debug hook: see config.h
      model.zero_grads();
      const model::Batch& b = batches[size_t(reducer.micro_batch(j))];
      // The last round: each range of the shard goes to the update once its sum is final.
      if (overlap && j + 1 == reducer.rounds(c.micro_batches))
        reducer.stream_round([&](int64_t lo, int64_t hi) { swap->grads_final(lo, hi); });
      model::LossStats st = model.forward_backward(b, counted > 0 ? float(1.0 / double(counted)) : 1.0f);
      reducer.add_round(st);
    }
    reducer.finish_step();
    const double ce_sum = reducer.ce_sum();
    const std::vector<std::vector<int64_t>>& step_load = reducer.expert_load();
    m.loss = counted > 0 ? ce_sum / double(counted) : 0.0;
    m.counted = counted;
    m.fwd_bwd_s = seconds_since(t1);

    Clock::time_point t2 = Clock::now();
    if (overlap) {
      // The chunks not yet updated, and the last write-backs (the exposed part), before
      // anything below touches the gradient the updater thread may still be reading.
      TREX_TRACE(kOptimizer, "swap.finish");
      swap->finish_step();
    }
    float* g = reducer.gradient();
    if (std::find(c.nan_at_step.begin(), c.nan_at_step.end(), long(step)) != c.nan_at_step.end())
      g[0] = std::numeric_limits<float>::quiet_NaN();  // debug hook: see config.h
    {
      TREX_TRACE(kOptimizer, "grad_norm");
      m.grad_norm = reducer.grad_norm();
    }
    if (!std::isfinite(m.loss) || !std::isfinite(m.grad_norm)) {
      if (overlap) swap->discard_step();
      m.skipped = true;
      ++consecutive_bad;
      ++skipped_total;
      if (options.print && lead)
        std::printf("step %lld: skipped (loss %g, grad norm %g not finite; %lld in a row)\n",
                    static_cast<long long>(step), m.loss, m.grad_norm, static_cast<long long>(consecutive_bad));
    } else {
      consecutive_bad = 0;
      float scale = pre_scale;
      if (clips_with_own_norm(c, last_norm) && c.clip_norm > 0 && m.grad_norm > c.clip_norm)
        scale = float(c.clip_norm / m.grad_norm);
      m.clipped = scale != 1.0f;
      if (overlap && scale == pre_scale) {
        swap->commit_step();  // the update made during the backward stands
      } else {
        if (overlap) {
          swap->discard_step();  // made with the wrong scale: redone below
          m.swap_redone = true;
          ++swap_redone;
        }
        if (m.clipped) {
          TREX_TRACE(kOptimizer, "clip");
          for (int64_t i = 0; i < shard_size; ++i) g[i] *= scale;
        }
        for (size_t gi = 0; gi < opt->groups().size(); ++gi) opt->set_lr(gi, float(m.lr));
        TREX_TRACE(kOptimizer, "optimizer_step");
        if (widen_in_step)
          adamw->step_and_widen_weights(g, shard_weights, model.params());
        else
          opt->step(g, shard_weights);
      }
      {
        TREX_TRACE(kOther, "dist.gather_weights");
        reducer.gather_weights(shard_weights, weights.data());
      }
      last_norm = m.grad_norm;
      if (!widen_in_step) {
        TREX_TRACE(kOptimizer, "bf16_to_params");
        widen_params(weights.data(), model.params(), n);
      }
      model.update_routing_bias(step_load);
    }
    m.optimizer_s = seconds_since(t2);
    m.step_s = seconds_since(t0);
    core::trace_record_step(step, step_begin_ns, core::trace_now_ns());
    m.tokens = tokens_per_step;
    m.tokens_per_s = double(tokens_per_step) / m.step_s;
    if (options.peak_flops > 0)
      m.mfu = 3.0 * flops_fwd_per_token * double(tokens_per_step) / (m.step_s * options.peak_flops);
    m.optimizer_bytes = int64_t(opt->memory().current());
    if (swap) {
      const optim::SwapStats& now = swap->total();
      m.swap = true;
      m.swap_io_s = now.io_s - swap_before.io_s;
      // Hidden means behind the forward and backward: after the backward (no overlap, or a
      // redone step) the whole swap step adds to the step, whatever overlaps inside it.
      m.swap_exposed_s = overlap && !m.swap_redone ? std::min(now.wait_s - swap_before.wait_s, m.swap_io_s)
                                                   : m.swap_io_s;
      m.swap_hidden_s = m.swap_io_s - m.swap_exposed_s;
      swap_io.push_back(m.swap_io_s);
      swap_exposed.push_back(m.swap_exposed_s);
      swap_hidden.push_back(m.swap_hidden_s);
      if (ctx.world_size() > 1) {
        // Every rank's, for rank 0's metrics: the ranks' shards are final at different times of
        // the backward, so their shares differ.
        const double mine[2] = {m.swap_io_s, m.swap_exposed_s};
        std::vector<double> all(2 * size_t(ctx.world_size()));
        ctx.world().allgather(mine, 2, all.data());
        for (size_t r = 0; r < swap_rank_io.size(); ++r) {
          m.swap_rank_io_s.push_back(all[2 * r]);
          m.swap_rank_exposed_s.push_back(all[2 * r + 1]);
          swap_rank_io[r].push_back(all[2 * r]);
          swap_rank_exposed[r].push_back(all[2 * r + 1]);
        }
      }
    }
    m.rss_bytes = current_rss_bytes();
    m.cpu_s = process_cpu_seconds() - cpu0;
    if (metrics) metrics->write(m);

    result.losses.push_back(m.loss);
    if (options.fingerprints) result.fingerprints.push_back(state_fingerprint(model));
    result.skipped.push_back(m.skipped);
    result.last_step = step;
    step_times.push_back(m.step_s);
    opt_times.push_back(m.optimizer_s);
    run_time += m.step_s;
    run_tokens += tokens_per_step;
    if (bar) bar->advance();
    if (options.print && lead && c.log_every > 0 && (step % c.log_every == 0 || step == start_step + 1))
      std::printf("step %5lld  loss %.4f  grad_norm %.3f  lr %.2e  %.0f tok/s  MFU %.1f%%%s\n",
                  static_cast<long long>(step), m.loss, m.grad_norm, m.lr, m.tokens_per_s, 100 * m.mfu,
                  m.skipped ? "  SKIPPED" : "");
    if (options.print) std::fflush(stdout);

    if (consecutive_bad >= c.nan_limit)
      throw TrainingStopped("train: stopped at step " + std::to_string(step) + ": " +
                               std::to_string(consecutive_bad) + " steps in a row with a non-finite loss or gradient "
                               "(guard.nan_limit = " + std::to_string(c.nan_limit) + ")");

    if (step % 25 == 0) fold_trace();

    if ((c.checkpoint_every > 0 && step % c.checkpoint_every == 0) || step == stop) {
      TREX_TRACE(kOther, "checkpoint");
      nlohmann::json state = {
          {"format", "trex.train.checkpoint"},
          {"version", 1},
          {"step", step},
          {"config", fs::absolute(c.file).string()},
          {"model", c.model.name},
          {"model_file", fs::absolute(c.model_file).string()},
          {"model_config", model_config_record},
          {"mode", to_string(c.mode)},
          {"seed", c.seed},
          {"seq", c.seq},
          {"rows", c.rows},
          {"micro_batches", c.micro_batches},
          {"packing", c.packing},
          {"sources", c.data.size()},
          {"data", packer.position().to_json()},
          {"schedule", {{"kind", c.schedule.kind}, {"peak_lr", c.schedule.peak_lr}, {"min_lr", c.schedule.min_lr},
                        {"warmup", c.schedule.warmup}, {"total", c.schedule.total}, {"next_lr", c.schedule.lr(step + 1)}}},
          {"consecutive_skips", consecutive_bad},
          {"skipped_total", skipped_total},
          {"last_grad_norm", last_norm},
          {"optimizer", c.optimizer},
      };
      if (ctx.world_size() == 1) {
        last_ckpt = write_checkpoint(run_dir, step, model, *opt, state, *tok, c.keep_last);
      } else {
        // Rank 0 makes the temporary directory, every rank writes its shard into it, rank 0
        // writes the index and the rest and publishes the directory.
        const int R = ctx.world_size();
        auto write_shard = [&](const std::string& tmp) {
          ctx.world().barrier("checkpoint directory");
          opt->save_state((fs::path(tmp) / optimizer_shard_name(ctx.rank(), R)).string());
          ctx.world().barrier("checkpoint shards");
        };
        if (lead) {
          last_ckpt = write_checkpoint(
              run_dir, step, model,
              [&](const std::string& tmp) {
                write_shard(tmp);
                std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges(static_cast<size_t>(R));
                for (int q = 0; q < R; ++q)
                  for (const dist::ShardRange& r : reducer.shard_map().ranges(q)) ranges[size_t(q)].push_back({r.begin, r.end});
                write_optimizer_index(tmp, n, ranges);
              },
              "ranks", state, *tok, c.keep_last);
        } else {
          write_shard(checkpoint_tmp_dir(run_dir, step, "ranks"));
        }
      }
    }
  }
  if (bar) bar->finish();
  if (options.print && lead && c.packing != "cut")
    std::printf("packing %s: %lld documents, %lld truncated to seq, %lld padding tokens\n",
                c.packing.c_str(), static_cast<long long>(packer.position().documents),
                static_cast<long long>(packer.truncated_documents()),
                static_cast<long long>(packer.padding_tokens()));
  fold_trace();
  core::trace_enable(false);
  result.trace = trace_total;
  if (!options.trace_path.empty()) {
    // One file per rank, each with its rank in distributedInfo (what HTA merges a run's traces by).
    core::TraceMetadata meta;
    meta.rank = ctx.rank();
    meta.world_size = ctx.world_size();
    meta.backend = ctx.world_size() > 1 ? "mpi" : "none";
    std::string path = options.trace_path;
    if (ctx.world_size() > 1) {
      fs::path p(path);
      path = (p.parent_path() / (p.stem().string() + ".rank" + std::to_string(ctx.rank()) + p.extension().string()))
                 .string();
    }
    core::write_chrome_trace(path, kept_events, meta);
  }

  result.checkpoint = last_ckpt;
  result.skipped_steps = skipped_total;
  result.tokens = run_tokens;
  result.tokens_per_s = run_time > 0 ? double(run_tokens) / run_time : 0;
  if (options.peak_flops > 0 && run_time > 0)
    result.mfu = 3.0 * flops_fwd_per_token * double(run_tokens) / (run_time * options.peak_flops);
  result.median_step_s = median(step_times);
  result.median_optimizer_s = median(opt_times);
  result.median_swap_io_s = median(swap_io);
  result.median_swap_exposed_s = median(swap_exposed);
  result.median_swap_hidden_s = median(swap_hidden);
  if (ctx.world_size() > 1 && swap)
    for (size_t r = 0; r < swap_rank_io.size(); ++r) {
      result.median_swap_rank_io_s.push_back(median(swap_rank_io[r]));
      result.median_swap_rank_exposed_s.push_back(median(swap_rank_exposed[r]));
    }
  result.swap_redone_steps = swap_redone;

  if (lead)
    write_file_atomic((fs::path(run_dir) / "loss.svg").string(),
                    loss_curve_svg(read_loss_points(metrics_path),
                                   c.model.name + " " + to_string(c.mode) + " (" + fs::path(c.file).filename().string() + ")"));
  opt.reset();  // removes the swap file
  return result;
}

}  // namespace trex::train
