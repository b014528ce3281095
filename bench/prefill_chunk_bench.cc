// prefill_chunk_bench: chunked prefill in trex serve's engine, measured (issue 16). While S
// streams decode (16-token prompts), a long prompt (--long tokens) arrives and, right after it,
// a short one (16 tokens); for each --prefill-chunk setting (0: the long prompt prefilled whole
// on admission), in one run, interleaved within each round:
//   - short first token: ms from the short request's submission to its first token;
//   - long first token: the same for the long request;
//   - longest gap: the longest wait between two tokens of any decoding stream, from the long
//     request's submission to its first token (how long the streams stall);
//   - lone long first token: the long prompt with nothing else running (what chunking costs a
//     long prompt alone: its rows go through the decoding step, not the prefill's GEMMs).
// Medians over the rounds; the 1-minute load average at each round's start.
//
//   build/prefill_chunk_bench [CONFIG] [--long N] [--streams S] [--chunks 0,16,32] [--repeats R]
//
// CONFIG defaults to configs/model/v4-nano.toml with seeded random weights (the cost does not
// depend on what the weights learned); the engine is driven directly, without HTTP.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double load_average() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

GenerationParams request(int vocab, int64_t prompt, int64_t tokens, uint64_t seed) {
  GenerationParams p;
  for (int64_t i = 0; i < prompt; ++i)
    p.prompt.push_back(int32_t((seed * 7919 + uint64_t(i) * 17) % uint64_t(vocab)));
  p.temperature = 0;
  p.max_tokens = tokens;
  return p;
}

// ms from t0 to g's first token (reads g to its end).
double first_token_ms(Generation& g, Clock::time_point t0) {
  double first = -1;
  for (;;) {
    auto e = g.next();
    if (!e || e->kind == GenerationEvent::kEnd) return first;
    if (e->kind == GenerationEvent::kToken && first < 0) first = ms_since(t0, Clock::now());
  }
}

struct Result {
  double short_ms = 0, long_ms = 0, gap_ms = 0, lone_ms = 0;
};

Result run(Engine& engine, int vocab, int streams, int64_t long_len, uint64_t seed) {
  Result r;
  {  // alone
    const Clock::time_point t0 = Clock::now();
    auto g = engine.submit(request(vocab, long_len, 4, seed));
    r.lone_ms = first_token_ms(*g, t0);
  }
  // The streams: each reader keeps its tokens' times.
  const int64_t stream_tokens = engine.context() - 17;
  std::vector<std::shared_ptr<Generation>> gens;
  std::vector<std::vector<Clock::time_point>> times(static_cast<size_t>(streams));
  std::atomic<int> started{0};
  for (int s = 0; s < streams; ++s)
    gens.push_back(engine.submit(request(vocab, 16, stream_tokens, seed * 31 + uint64_t(s))));
  std::vector<std::thread> readers;
  for (int s = 0; s < streams; ++s)
    readers.emplace_back([&, s] {
      for (;;) {
        auto e = gens[size_t(s)]->next();
        if (!e || e->kind == GenerationEvent::kEnd) return;
        times[size_t(s)].push_back(Clock::now());
        if (times[size_t(s)].size() == 8) ++started;
      }
    });
  while (started < streams) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const Clock::time_point t0 = Clock::now();
  auto long_gen = engine.submit(request(vocab, long_len, 4, seed + 1));
  const Clock::time_point t1 = Clock::now();
  auto short_gen = engine.submit(request(vocab, 16, 4, seed + 2));
  double long_first = -1;
  std::thread long_reader([&] { long_first = first_token_ms(*long_gen, t0); });
  r.short_ms = first_token_ms(*short_gen, t1);
  long_reader.join();
  r.long_ms = long_first;
  for (auto& g : gens) g->cancel();
  for (auto& t : readers) t.join();
  const Clock::time_point until = t0 + std::chrono::microseconds(int64_t(1e3 * long_first));
  for (const auto& ts : times) {
    // The gaps that overlap [t0, until].
    for (size_t i = 1; i < ts.size(); ++i)
      if (ts[i] >= t0 && ts[i - 1] <= until) r.gap_ms = std::max(r.gap_ms, ms_since(ts[i - 1], ts[i]));
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config = "configs/model/v4-nano.toml";  // run from the repository root
  int64_t long_len = 448;
  int streams = 7, repeats = 5;
  std::vector<int> chunks = {0, 16};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--long") long_len = std::atoll(next().c_str());
    else if (a == "--streams") streams = std::atoi(next().c_str());
    else if (a == "--repeats") repeats = std::atoi(next().c_str());
    else if (a == "--chunks") {
      chunks.clear();
      const std::string s = next();
      for (size_t at = 0; at < s.size();) {
        const size_t comma = s.find(',', at);
        chunks.push_back(std::atoi(s.substr(at, comma - at).c_str()));
        at = comma == std::string::npos ? s.size() : comma + 1;
      }
    } else config = a;
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
  std::vector<std::vector<double>> s_ms(n), l_ms(n), gap(n), lone(n);
  for (int r = 0; r < repeats; ++r) {
    std::fprintf(stderr, "round %d (load %.2f):", r + 1, load_average());
    for (size_t i = 0; i < n; ++i) {
      const Result x = run(*engines[i], c.vocab, streams, long_len, uint64_t(r + 1));
      s_ms[i].push_back(x.short_ms);
      l_ms[i].push_back(x.long_ms);
      gap[i].push_back(x.gap_ms);
      lone[i].push_back(x.lone_ms);
      std::fprintf(stderr, " [chunk %d: short %.1f, long %.1f, gap %.1f, lone %.1f ms]", chunks[i],
                   x.short_ms, x.long_ms, x.gap_ms, x.lone_ms);
    }
    std::fprintf(stderr, "\n");
  }
  std::printf("%s, %d streams, long prompt %lld tokens, medians of %d rounds (load %.2f at the end)\n",
              c.name.c_str(), streams, static_cast<long long>(long_len), repeats, load_average());
  for (size_t i = 0; i < n; ++i)
    std::printf("prefill-chunk %3d: short first token %.1f ms, long first token %.1f ms, longest stream gap %.1f ms, lone long first token %.1f ms\n",
                chunks[i], median(s_ms[i]), median(l_ms[i]), median(gap[i]), median(lone[i]));
  return 0;
}
