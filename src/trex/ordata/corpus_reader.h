// Reading the samples of a finished corpus (the data parts `trex data gen` writes), for the
// passes that use a corpus after it is made: distillation, and the recipe's held-out benchmark.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trex::ordata {

struct CorpusSample {
  std::string id, family, statement;
  std::string lp;                    // formulations.lp, the reference model
  std::string status;                // answer.status: "optimal", "infeasible", "unbounded"
  std::optional<double> objective;   // answer.objective, when optimal
  std::string file;                  // where it was read, for messages
  long line = 0;
};

// The samples of DIR/data/part-* in part and line order; at most `limit` (0: all). Throws
// InputError naming the file and line for a line that is cut off, not JSON or not a sample, and
// naming DIR when it is not a corpus.
std::vector<CorpusSample> read_corpus_samples(const std::string& dir, long limit = 0);

}  // namespace trex::ordata
