// model_step_bench: one training step of trex's Transformer, timed: forward_backward over a packed
// sequence, then an in-memory AdamW step (optim::AdamW) that writes its fp32 master weights into
// the model's parameters in the same pass. The trex side of bench/train_vs_torch.py, which runs
// the PyTorch implementation (python/trex_v4_torch.py bench) on the same config, sequence and
// thread count.
//
//   TREX_THREADS=2 build/model_step_bench CONFIG [--seq N] [--steps N] [--warmup N] [--mtp]
//                                          [--trace FILE | --tuning-ab FILE]
//
// Prints one JSON object: per-step wall times (whole step, forward+backward, optimizer), their
// medians, tokens/s and the losses; also the process CPU time (user + sys, all threads) and the
// minor page faults of each forward+backward, which on a shared machine are steadier than wall
// time; and at the end, the process's anonymous memory and how much of it is on transparent
// huge pages (/proc/self/smaps_rollup), beside whether large buffers asked for them
// (TREX_HUGEPAGES=0: 4 KiB pages, core/arena.h). MTP blocks are off unless --mtp (the PyTorch
// side has none). --trace writes the Chrome trace of the timed steps' forward+backward (per-operator spans, trex/core/trace.h).
// --tuning-ab FILE: tuned against untuned in one process. Each of --steps N is a pair of steps,
// one with the kernel tuning FILE active and one with none (whatever TREX_TUNING says), their order
// swapped every pair (untuned first in pairs 0, 2, ...; N must be even), and --warmup N (at least
// 1) warms each arm N times; the JSON adds each arm's step, forward+backward and CPU times, the
// per-pair ratios untuned / tuned (whole step and forward+backward) and their medians, and per
// timed step whether the kernels' lookup saw the file active (active_tuning_steps). Why
// (session 18): two processes, one with TREX_TUNING set and one without, differ in more than the
// tuned parameters (environment, heap layout, the minutes between them on a loaded machine); two
// steps of one process a second apart differ only in the parameters the kernels read.
// Not a Google Benchmark program: a step takes seconds, and the comparison wants the raw times.
// Bad input (a flag, the config, the tuning file): one line on stderr, exit 2.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sys/resource.h>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/core/arena.h"
#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"
#include "trex/kernels/tuning.h"
#include "trex/model/config.h"
#include "trex/model/transformer.h"
#include "trex/optim/adamw.h"
#include "trex/util/error.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Usage {
  double cpu_s;
  long minor_faults;
};
Usage process_usage() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
              1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec),
          u.ru_minflt};
}

// kB of this process's anonymous memory now, and of it on transparent huge pages; -1 where
// /proc/self/smaps_rollup cannot be read.
struct AnonPages {
  long anon_kb = -1, huge_kb = -1;
};
AnonPages anon_pages() {
  AnonPages r;
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {  // the first line is the range's header: no "Key: N kB"
    long kb;
    if (std::sscanf(line.c_str(), "Anonymous: %ld kB", &kb) == 1) r.anon_kb = kb;
    else if (std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1) r.huge_kb = kb;
  }
  return r;
}

int usage() {
  std::fprintf(stderr, "usage: model_step_bench CONFIG [--seq N] [--steps N] [--warmup N] [--mtp] [--trace FILE | --tuning-ab FILE]\n");
  return 2;
}

int run(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string config = argv[1];
  long seq = 0, steps = 3, warmup = 1;
  bool mtp = false;
  std::string trace_path, ab_path;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* name) -> long {
      if (i + 1 >= argc) throw trex::InputError(std::string(name) + ": missing value");
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 0) throw trex::InputError(std::string(name) + ": not a count: " + argv[i]);
      return v;
    };
    if (a == "--seq") seq = next("--seq");
    else if (a == "--steps") steps = std::max(1L, next("--steps"));
    else if (a == "--warmup") warmup = next("--warmup");
    else if (a == "--mtp") mtp = true;
    else if ((a == "--trace" || a == "--tuning-ab") && i + 1 < argc) {
      // An empty value would silently mean "no trace" / "no A/B" (review raura4 LOW 5).
      if (argv[++i][0] == '\0') throw trex::InputError::field(a, "empty path");
      (a == "--trace" ? trace_path : ab_path) = argv[i];
    } else return usage();
  }
  // The trace's steps would mix both arms (the anatomy sums every step).
  if (!trace_path.empty() && !ab_path.empty()) throw trex::InputError::field("--tuning-ab", "not with --trace");
  // An odd count would give the untuned-first order one pair more; with no warm-up the first
  // timed step (untuned) pays the first touch of every buffer (review raura4 LOW 6).
  if (!ab_path.empty() && steps % 2 != 0)
    throw trex::InputError::field("--steps", "must be even with --tuning-ab (as many untuned-first as tuned-first pairs)");
  if (!ab_path.empty() && warmup < 1)
    throw trex::InputError::field("--warmup", "at least 1 with --tuning-ab (the first step pays the first touch)");
  // Read before the model is built: a bad file costs nothing and writes nothing.
  std::shared_ptr<const trex::kernels::Tuning> ab_tuning;
  if (!ab_path.empty()) ab_tuning = std::make_shared<const trex::kernels::Tuning>(trex::kernels::Tuning::load(ab_path));
  trex::model::ModelConfig cfg = trex::model::load_model_config(config);
  if (seq == 0) seq = cfg.train_seq_len;
  trex::model::Transformer model(cfg, /*seed=*/1, mtp);
  const trex::model::ParamLayout& layout = model.layout();

  // One document of random tokens; every position but the last has a target.
  trex::model::Batch batch;
  batch.tokens = seq;
  batch.docs = {{0, seq}};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> id(0, cfg.vocab - 1);
  for (long t = 0; t < seq; ++t) batch.ids.push_back(id(rng));
  for (long t = 0; t < seq; ++t) batch.targets.push_back(t + 1 < seq ? batch.ids[t + 1] : -1);

  // Optimizer groups: consecutive runs of parameters with the same weight-decay flag.
  std::vector<trex::optim::ParamGroup> groups;
  for (const trex::model::ParamInfo& p : layout.params) {
    if (groups.empty() || (groups.back().hyper.weight_decay > 0) != p.decay) {
      trex::optim::ParamGroup g;
      g.name = "g" + std::to_string(groups.size());
      g.hyper.lr = 1e-4f;
      g.hyper.beta2 = 0.95f;
      g.hyper.weight_decay = p.decay ? 0.1f : 0.0f;
      groups.push_back(g);
    }
    groups.back().size += p.numel;
  }
  trex::optim::AdamW opt(groups, model.params());

  std::vector<double> step_s, fb_s, opt_s, fb_cpu_s, losses;
  std::vector<long> fb_faults;
  std::vector<bool> tuned_steps;   // --tuning-ab: which timed steps were meant to run with the tuning
  std::vector<bool> active_steps;  // ... and whether the kernels' lookup saw a tuning active
  const bool ab = ab_tuning != nullptr;
  const long warm = ab ? 2 * warmup : warmup, timed = ab ? 2 * steps : steps;
  for (long s = 0; s < warm + timed; ++s) {
    if (s == warm && !trace_path.empty()) trex::core::trace_enable(true);
    if (ab) {
      // Warm-up alternates; timed pair p runs untuned first when p is even, tuned first when odd.
      const long i = s - warm;
      const bool tuned = s < warm ? s % 2 == 1 : ((i / 2) % 2 == 0) == (i % 2 == 1);
      trex::kernels::set_active_tuning(tuned ? ab_tuning : nullptr);
      if (s >= warm) {
        tuned_steps.push_back(tuned);
        active_steps.push_back(trex::kernels::active_tuning() == ab_tuning);
      }
    }
    const Usage u0 = process_usage();
    const int64_t step_begin_ns = trex::core::trace_now_ns();
    Clock::time_point t0 = Clock::now();
    model.zero_grads();
    trex::model::LossStats st = model.forward_backward(batch);
    double fb = seconds_since(t0);
    const Usage u1 = process_usage();
    Clock::time_point t1 = Clock::now();
    {
      // The update writes the new master weights into the model's parameters in the same pass
      // (until session 24 a second pass, read_state(kMaster), 21 ms a step on one thread).
      TREX_TRACE(kOptimizer, "optimizer_step");
      opt.step_and_copy_master(model.grads(), nullptr, model.params());
    }
    double o = seconds_since(t1);
    double all = seconds_since(t0);
    trex::core::trace_record_step(s - warm, step_begin_ns, trex::core::trace_now_ns());
    losses.push_back(st.loss());
    if (s >= warm) {
      step_s.push_back(all);
      fb_s.push_back(fb);
      opt_s.push_back(o);
      fb_cpu_s.push_back(u1.cpu_s - u0.cpu_s);
      fb_faults.push_back(u1.minor_faults - u0.minor_faults);
    }
  }
  if (!trace_path.empty()) {
    trex::core::trace_enable(false);
    trex::core::write_chrome_trace(trace_path, trex::core::trace_collect());
  }
  const AnonPages pages = anon_pages();  // the model, its gradients and activations still live
  nlohmann::json j;
  j["config"] = config;
  j["seq"] = seq;
  j["threads"] = trex::core::default_thread_pool().num_threads();
  j["mtp"] = mtp;
  j["params"] = layout.total;
  j["step_times_s"] = step_s;
  j["forward_backward_s"] = fb_s;
  j["optimizer_s"] = opt_s;
  j["median_step_s"] = median(step_s);
  j["median_forward_backward_s"] = median(fb_s);
  j["median_optimizer_s"] = median(opt_s);
  j["forward_backward_cpu_s"] = fb_cpu_s;
  j["median_forward_backward_cpu_s"] = median(fb_cpu_s);
  j["forward_backward_minor_faults"] = fb_faults;
  j["tokens_per_s"] = double(seq) / median(step_s);
  j["losses"] = losses;
  j["huge_pages_requested"] = trex::core::large_buffers_ask_for_huge_pages();
  j["anon_kb"] = pages.anon_kb;
  j["anon_huge_pages_kb"] = pages.huge_kb;
  if (ab) {
    std::vector<double> un_s, tu_s, un_fb, tu_fb, un_cpu, tu_cpu, ratios, fb_ratios;
    for (size_t i = 0; i < tuned_steps.size(); ++i) {
      (tuned_steps[i] ? tu_s : un_s).push_back(step_s[i]);
      (tuned_steps[i] ? tu_fb : un_fb).push_back(fb_s[i]);
      (tuned_steps[i] ? tu_cpu : un_cpu).push_back(fb_cpu_s[i]);
    }
    long faster = 0;
    for (size_t p = 0; p < un_s.size() && p < tu_s.size(); ++p) {
      ratios.push_back(un_s[p] / tu_s[p]);
      fb_ratios.push_back(un_fb[p] / tu_fb[p]);
      faster += tu_s[p] < un_s[p];
    }
    j["tuning_ab"] = ab_path;
    j["tuned_steps"] = tuned_steps;
    j["active_tuning_steps"] = active_steps;
    j["untuned_step_s"] = un_s;
    j["tuned_step_s"] = tu_s;
    j["untuned_forward_backward_cpu_s"] = un_cpu;
    j["tuned_forward_backward_cpu_s"] = tu_cpu;
    j["median_untuned_step_s"] = median(un_s);
    j["median_tuned_step_s"] = median(tu_s);
    j["pair_ratios"] = ratios;  // untuned / tuned, pair by pair
    j["median_pair_ratio"] = median(ratios);
    j["tuned_faster_pairs"] = faster;
    // The step includes the optimizer, which no tuning touches (about 65 ms of v4-micro's step);
    // the forward+backward ratio sits beside the CPU columns, which are forward+backward only.
    j["untuned_forward_backward_s"] = un_fb;
    j["tuned_forward_backward_s"] = tu_fb;
    j["forward_backward_pair_ratios"] = fb_ratios;
    j["median_forward_backward_pair_ratio"] = median(fb_ratios);
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const trex::InputError& e) {
    std::fprintf(stderr, "model_step_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_step_bench: %s\n", e.what());
    return 1;
  }
}
