// prefill_bench: the CPU and wall time of a prompt's prefill in trex serve's decoder
// (BatchDecoder::prefill_many, as the engine admits prompts), per prompt, for each prompt length
// in --prompts and each batch size in --clients (k prompts admitted at one step: with several
// threads they run on the lanes, one prompt per lane at a time; a lone prompt runs with its
// kernels on the whole default pool). Lengths and batch sizes interleaved within each round;
// each point the median over --repeats rounds of one round's mean over its --batches calls.
// CPU is the process's (all threads, clock_gettime(CLOCK_PROCESS_CPUTIME_ID)), which other
// processes' load hardly changes where wall time grows with it; it counts the pool's spin-waits
// too (TREX_POOL_SPIN_US=0 leaves those out). Issue 16: the prompt lengths where prefill leaves
// the packed weight copies for the GEMMs (AttentionLayer::kPackedPrefillTokens,
// MoeLayer::kPackedFewTokens), printed in the header.
//
//   build/prefill_bench [CONFIG] [--prompts 8,16,18,24,32,48,64] [--clients 1,8] [--batches 8]
//                       [--repeats 7]
//
// CONFIG defaults to configs/model/v4-nano.toml with seeded random weights (the cost does not
// depend on what the weights learned).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "bench_util.h"
#include "trex/model/attention.h"
#include "trex/model/batch_decoder.h"
#include "trex/model/config.h"
#include "trex/model/moe.h"
#include "trex/model/transformer.h"
#include "trex/util/error.h"

using trex::bench::median;

namespace {

int run(int argc, char** argv) {
  std::string config = "configs/model/v4-nano.toml";
  int batches = 8, repeats = 7;
  std::vector<int> prompts = {8, 16, 18, 24, 32, 48, 64}, clients = {1, 8};
  for (trex::bench::Args a(argc, argv); a.next();) {
    if (a.is("--prompts")) prompts = a.integers(1, 1 << 16);
    else if (a.is("--clients")) clients = a.integers(1, 256);
    else if (a.is("--batches")) batches = int(a.integer(1, 1 << 20));
    else if (a.is("--repeats")) repeats = int(a.integer(1, 1000));
    else config = a.positional();
  }
  const trex::model::ModelConfig c = trex::model::load_model_config(config);
  trex::model::Transformer model(c, 1, false);
  const int S = *std::max_element(clients.begin(), clients.end());
  trex::model::BatchDecoder dec(model, S);
  std::printf("prefill_bench: %s, packed prefill up to %lld tokens (attention) / %lld (MoE), "
              "lanes prefill up to %lld\n",
              c.name.c_str(), static_cast<long long>(trex::model::AttentionLayer::kPackedPrefillTokens),
              static_cast<long long>(trex::model::MoeLayer::kPackedFewTokens),
              static_cast<long long>(trex::model::BatchDecoder::kLanePrefillMaxTokens));
  // [prompt][clients] -> per-round ms per prompt
  std::vector<std::vector<std::vector<double>>> cpu(prompts.size(), std::vector<std::vector<double>>(clients.size())),
      wall = cpu;
  std::vector<double> loads;
  for (int r = -1; r < repeats; ++r) {  // round -1 warms up (packs the weights)
    loads.push_back(trex::bench::load_average());
    for (size_t i = 0; i < prompts.size(); ++i) {
      for (size_t j = 0; j < clients.size(); ++j) {
        const int P = prompts[i], k = clients[j];
        std::vector<int> slots(static_cast<size_t>(k));
        std::vector<std::vector<int32_t>> ids(static_cast<size_t>(k));
        double cpu_s = 0, wall_s = 0;
        const int n = r < 0 ? 1 : batches;
        for (int b = 0; b < n; ++b) {
          for (int s = 0; s < k; ++s) {
            slots[size_t(s)] = s;
            dec.reset(s);
            std::vector<int32_t>& p = ids[size_t(s)];
            p.resize(size_t(P));
            for (int t = 0; t < P; ++t)
              p[size_t(t)] = int32_t((uint64_t(s) * 131 + uint64_t(t) * 17 + uint64_t(b * 7 + r + 2) * 7919) % uint64_t(c.vocab));
          }
          std::vector<std::span<const int32_t>> views(ids.begin(), ids.end());
          const double c0 = trex::bench::process_cpu_seconds();
          const auto t0 = std::chrono::steady_clock::now();
          dec.prefill_many(slots, views);
          wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          cpu_s += trex::bench::process_cpu_seconds() - c0;
        }
        if (r >= 0) {
          cpu[i][j].push_back(1e3 * cpu_s / (n * k));
          wall[i][j].push_back(1e3 * wall_s / (n * k));
        }
      }
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i)
    for (size_t j = 0; j < clients.size(); ++j)
      std::printf("prompt %3d, %d at once: %.3f ms CPU, %.3f ms wall per prompt (medians of %d rounds)\n",
                  prompts[i], clients[j], median(cpu[i][j]), median(wall[i][j]), repeats);
  std::printf("load %.2f at the first round, %.2f median\n", loads.front(), median(loads));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const trex::InputError& e) {  // an unreadable or bad CONFIG: one line, exit 2
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
