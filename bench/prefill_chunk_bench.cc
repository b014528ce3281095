// prefill_chunk_bench: chunked prefill in trex serve's engine, measured (issue 16). While S
// streams decode (16-token prompts), a long prompt (--long tokens) arrives and, right after it,
// a short one (16 tokens); for each --prefill-chunk setting (0: the long prompt prefilled whole
// on admission), in one run, interleaved within each round:
//   - short first token: from the short request's submission to its first token;
//   - long first token: the same for the long request;
//   - longest gap: the longest wait between two tokens of any decoding stream, from the long
//     request's submission to its first token (how long the streams stall);
//   - lone long first token: the long prompt with nothing else running (what chunking costs a
//     long prompt alone).
// Each is given twice: wall ms, and the CPU ms the process used meanwhile (all its threads;
// clock_gettime(CLOCK_PROCESS_CPUTIME_ID) read by the thread that sees the event). Wall time on
// a shared machine grows with the other processes' load; CPU time hardly does, so the CPU
// figures compare the settings where the wall ones swing (they count the pool's spin-waits too:
// run with TREX_POOL_SPIN_US=0 to leave those out).
// Medians over the rounds; the 1-minute load average at each round's start.
//
//   build/prefill_chunk_bench [CONFIG] [--long N] [--streams S] [--chunks 0,16,64] [--repeats R]
//
// CONFIG defaults to configs/model/v4-nano.toml with seeded random weights (the cost does not
// depend on what the weights learned); the engine is driven directly, without HTTP.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "trex/model/config.h"
#include "trex/model/transformer.h"
#include "trex/serve/engine.h"

namespace {

using Clock = std::chrono::steady_clock;
using trex::serve::Engine;
using trex::serve::Generation;
using trex::serve::GenerationEvent;
using trex::serve::GenerationParams;

double ms_since(Clock::time_point t0, Clock::time_point t1) {
  return 1e3 * std::chrono::duration<double>(t1 - t0).count();
}

using trex::bench::median;
using trex::bench::load_average;
using trex::bench::process_cpu_seconds;

// A moment on both clocks: wall, and the process's CPU seconds.
struct Stamp {
  Clock::time_point wall;
  double cpu = 0;
  static Stamp now() { return {Clock::now(), process_cpu_seconds()}; }
};

// From a to b: wall ms and CPU ms.
struct Span {
  double wall_ms = -1, cpu_ms = -1;
};
Span between(const Stamp& a, const Stamp& b) { return {ms_since(a.wall, b.wall), 1e3 * (b.cpu - a.cpu)}; }

GenerationParams request(int vocab, int64_t prompt, int64_t tokens, uint64_t seed) {
  GenerationParams p;
  for (int64_t i = 0; i < prompt; ++i)
    p.prompt.push_back(int32_t((seed * 7919 + uint64_t(i) * 17) % uint64_t(vocab)));
  p.temperature = 0;
  p.max_tokens = tokens;
  return p;
}

// From t0 to g's first token (reads g to its end).
Span first_token(Generation& g, const Stamp& t0) {
  Span first;
  for (;;) {
    auto e = g.next();
    if (!e || e->kind == GenerationEvent::kEnd) return first;
    if (e->kind == GenerationEvent::kToken && first.wall_ms < 0) first = between(t0, Stamp::now());
  }
}

struct Result {
  Span short_first, long_first, gap, lone;
};

Result run(Engine& engine, int vocab, int streams, int64_t long_len, uint64_t seed) {
  Result r;
  {  // alone
    const Stamp t0 = Stamp::now();
    auto g = engine.submit(request(vocab, long_len, 4, seed));
    r.lone = first_token(*g, t0);
  }
  // The streams: each reader keeps its tokens' moments.
  const int64_t stream_tokens = engine.context() - 17;
  std::vector<std::shared_ptr<Generation>> gens;
  std::vector<std::vector<Stamp>> times(static_cast<size_t>(streams));
  std::atomic<int> started{0};
  for (int s = 0; s < streams; ++s)
    gens.push_back(engine.submit(request(vocab, 16, stream_tokens, seed * 31 + uint64_t(s))));
  std::vector<std::thread> readers;
  for (int s = 0; s < streams; ++s)
    readers.emplace_back([&, s] {
      for (;;) {
        auto e = gens[size_t(s)]->next();
        if (!e || e->kind == GenerationEvent::kEnd) return;
        times[size_t(s)].push_back(Stamp::now());
        if (times[size_t(s)].size() == 8) ++started;
      }
    });
  while (started < streams) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const Stamp t0 = Stamp::now();
  auto long_gen = engine.submit(request(vocab, long_len, 4, seed + 1));
  const Stamp t1 = Stamp::now();
  auto short_gen = engine.submit(request(vocab, 16, 4, seed + 2));
  std::thread long_reader([&] { r.long_first = first_token(*long_gen, t0); });
  r.short_first = first_token(*short_gen, t1);
  long_reader.join();
  for (auto& g : gens) g->cancel();
  for (auto& t : readers) t.join();
  const Clock::time_point until = t0.wall + std::chrono::microseconds(int64_t(1e3 * r.long_first.wall_ms));
  r.gap = {0, 0};
  for (const auto& ts : times) {
    // The gaps that overlap [t0, until]; the longest in wall time and the longest in CPU time.
    for (size_t i = 1; i < ts.size(); ++i)
      if (ts[i].wall >= t0.wall && ts[i - 1].wall <= until) {
        const Span g = between(ts[i - 1], ts[i]);
        r.gap.wall_ms = std::max(r.gap.wall_ms, g.wall_ms);
        r.gap.cpu_ms = std::max(r.gap.cpu_ms, g.cpu_ms);
      }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config = "configs/model/v4-nano.toml";  // run from the repository root
  int64_t long_len = 448;
  int streams = 7, repeats = 5;
  std::vector<int> chunks = {0, 16};
  for (trex::bench::Args a(argc, argv); a.next();) {
    if (a.is("--long")) long_len = a.integer(65, 1 << 20);
    else if (a.is("--streams")) streams = int(a.integer(0, 256));
    else if (a.is("--repeats")) repeats = int(a.integer(1, 1000));
    else if (a.is("--chunks")) chunks = a.integers(0, 1 << 20);
    else config = a.positional();
  }
  const trex::model::ModelConfig c = trex::model::load_model_config(config);
  trex::model::Transformer model(c, 1, false);
  std::vector<std::unique_ptr<Engine>> engines;
  for (int chunk : chunks) {
    trex::serve::EngineOptions eo;
    eo.slots = streams + 2;
    eo.queue_limit = 4;
    eo.context = std::max<int64_t>(long_len + 8, 512);
    eo.prefill_chunk = chunk;
    engines.push_back(std::make_unique<Engine>(model, "", eo));
    run(*engines.back(), c.vocab, 1, 80, 99);  // warm-up: packs the weights
  }
  const size_t n = chunks.size();
  std::vector<std::vector<Result>> res(n);
  for (int r = 0; r < repeats; ++r) {
    std::fprintf(stderr, "round %d (load %.2f):", r + 1, load_average());
    for (size_t i = 0; i < n; ++i) {
      const Result x = run(*engines[i], c.vocab, streams, long_len, uint64_t(r + 1));
      res[i].push_back(x);
      std::fprintf(stderr, " [chunk %d: short %.1f/%.1f, long %.1f/%.1f, gap %.1f/%.1f, lone %.1f/%.1f]",
                   chunks[i], x.short_first.wall_ms, x.short_first.cpu_ms, x.long_first.wall_ms,
                   x.long_first.cpu_ms, x.gap.wall_ms, x.gap.cpu_ms, x.lone.wall_ms, x.lone.cpu_ms);
    }
    std::fprintf(stderr, "\n");
  }
  std::printf("%s, %d streams, long prompt %lld tokens, medians of %d rounds (load %.2f at the end); each: wall ms / CPU ms\n",
              c.name.c_str(), streams, static_cast<long long>(long_len), repeats, load_average());
  for (size_t i = 0; i < n; ++i) {
    auto med = [&](Span Result::*f) {
      std::vector<double> w, u;
      for (const Result& x : res[i]) {
        w.push_back((x.*f).wall_ms);
        u.push_back((x.*f).cpu_ms);
      }
      return Span{median(w), median(u)};
    };
    const Span sf = med(&Result::short_first), lf = med(&Result::long_first), g = med(&Result::gap),
               lo = med(&Result::lone);
    std::printf("prefill-chunk %3d: short first token %.1f / %.1f, long first token %.1f / %.1f, longest stream gap %.1f / %.1f, lone long first token %.1f / %.1f\n",
                chunks[i], sf.wall_ms, sf.cpu_ms, lf.wall_ms, lf.cpu_ms, g.wall_ms, g.cpu_ms,
                lo.wall_ms, lo.cpu_ms);
  }
  return 0;
}
