// decode_step_bench: BatchDecoder::step alone (no engine, no sampling): wall time per step and
// per token for B rows at once, B in --rows (default 1,2,4,8), interleaved over R rounds, each
// point the median over rounds of the mean over --steps steps from position --prompt.
//
//   build/decode_step_bench [CONFIG] [--rows 1,8] [--steps 128] [--prompt 16] [--repeats 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "trex/model/batch_decoder.h"
#include "trex/model/config.h"
#include "trex/model/transformer.h"

using trex::bench::median;

int main(int argc, char** argv) {
  std::string config = "configs/model/v4-nano.toml";
  int steps = 128, prompt = 16, repeats = 5;
  std::vector<int> rows = {1, 2, 4, 8};
  for (trex::bench::Args a(argc, argv); a.next();) {
    if (a.is("--steps")) steps = int(a.integer(1, 1 << 20));
    else if (a.is("--prompt")) prompt = int(a.integer(1, 1 << 20));
    else if (a.is("--repeats")) repeats = int(a.integer(1, 1000));
    else if (a.is("--rows")) rows = a.integers(1, 4096);
    else config = a.positional();
  }
  const trex::model::ModelConfig c = trex::model::load_model_config(config);
  trex::model::Transformer model(c, 1, false);
  const int S = *std::max_element(rows.begin(), rows.end());
  trex::model::BatchDecoder dec(model, S);
  std::vector<std::vector<double>> us(rows.size()), cpu(rows.size());
  for (int r = -1; r < repeats; ++r) {  // round -1 warms up (packs the weights)
    for (size_t k = 0; k < rows.size(); ++k) {
      const int B = rows[k];
      std::vector<int> slots(static_cast<size_t>(B));
      std::vector<int32_t> ids(static_cast<size_t>(B));
      for (int b = 0; b < B; ++b) {
        slots[size_t(b)] = b;
        dec.reset(b);
        std::vector<int32_t> p(static_cast<size_t>(prompt));
        for (int i = 0; i < prompt; ++i) p[size_t(i)] = int32_t((b * 131 + i * 17 + (r + 1) * 7) % c.vocab);
        dec.prefill(b, p);
        ids[size_t(b)] = int32_t((b * 37 + 5) % c.vocab);
      }
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = trex::bench::process_cpu_seconds();
      const int n = r < 0 ? 8 : steps;
      for (int s = 0; s < n; ++s) {
        auto lg = dec.step(slots, ids);
        for (int b = 0; b < B; ++b)  // greedy, so the rows follow real sequences
          ids[size_t(b)] = int32_t(std::max_element(lg.begin() + b * c.vocab, lg.begin() + (b + 1) * c.vocab) - (lg.begin() + b * c.vocab));
      }
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 0) us[k].push_back(1e6 * t / n);
      if (r >= 0) cpu[k].push_back(1e6 * (trex::bench::process_cpu_seconds() - c0) / n);
    }
  }
  const double base = median(us[0]) / rows[0];
  for (size_t k = 0; k < rows.size(); ++k) {
    const double m = median(us[k]);
    std::printf("rows %d: %.1f us/step, %.1f us/token, %.0f tokens/s, %.2fx rows %d's tokens/s; CPU %.1f us/step\n", rows[k], m,
                m / rows[k], 1e6 * rows[k] / m, base / (m / rows[k]), rows[0], median(cpu[k]));
  }
  return 0;
}
