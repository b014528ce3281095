// trex demo, corpus step: a small OR-CPT run (every family, seed 7) into a temporary
// directory, then the independent check with GLPK; it agrees when every sample re-verifies.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "commands.h"
#include "trex/ordata/config.h"
#include "trex/ordata/corpus_check.h"
#include "trex/ordata/corpus_run.h"
#include "trex/util/subprocess.h"

namespace trex::cli {

namespace {

int run_data_demo() {
  namespace fs = std::filesystem;
  using namespace trex::ordata;
  const std::string dir = (fs::temp_directory_path() / ("trex_demo_corpus_" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  RunOptions o;
  o.config = default_config();
  o.config.count = 48;
  o.config.seed = 7;
  o.config.block_size = 64;
  finalize_config(o.config);
  o.out_dir = dir;
  RunReport r = run_corpus(o);
  const auto& m = r.manifest;
  std::printf("trex demo: OR-CPT corpus, %ld samples from %zu families (%ld generated), %.0f samples/s\n",
              m["samples"].get<long>(), m["per_family"].size(), m["candidates"].get<long>(),
              m["samples_per_second"].get<double>());
  long rejected = 0;
  for (const auto& [k, v] : m["per_reason"].items()) rejected += v["count"].get<long>();
  std::printf("  rejected by the gates: %ld; files: data/, cpt/, sft/, manifest.json, card.md\n", rejected);
  bool ok = r.accepted == 48;
  if (program_available("glpsol")) {
    CorpusCheckReport c = check_corpus(dir, "glpk", 0);
    std::printf("  trex data check (glpk re-solve of every sample): %ld samples, %zu issues (%s)\n", c.samples,
                c.issues.size(), c.issues.empty() ? "agrees" : "DISAGREES");
    ok = ok && c.issues.empty() && c.samples == 48;
  } else {
    std::printf("  trex data check: skipped (glpsol not installed)\n");
  }
  fs::remove_all(dir);
  return ok ? 0 : 1;
}

const DemoStepRegistration kDataDemoStep(30, run_data_demo);

}  // namespace

}  // namespace trex::cli
