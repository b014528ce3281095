// `trex data check`: an independent re-verification of an exported corpus.
//
// Every line of every data part is parsed again; a line that is not JSON, lacks a field or
// is cut off is reported with its file and line, and checking goes on. Each sample's LP is
// re-read and re-solved by a different solver (GLPK's glpsol by default, in its own
// process); the status and objective must agree with the sample's answer, the stated
// solution must be feasible with that objective, the gurobipy program must read back to
// the same model, and the reviewer, direction and cleaner checks are recomputed from the
// text. Duplicates (exact text and structure) across the whole corpus are reported too.
#pragma once

#include <string>
#include <vector>

namespace trex::ordata {

struct CheckIssue {
  std::string file;
  long line = 0;
  std::string id;       // empty when the line could not be read
  std::string kind;     // "corrupt", "truncated", "disagreement", "duplicate"
  std::string message;
};

struct CorpusCheckReport {
  long samples = 0, parts = 0;
  long resolved = 0;  // samples re-solved by the other solver
  std::vector<CheckIssue> issues;
  double seconds = 0;
  std::string solver;
};

// Throws InputError when `dir` is not a corpus directory.
CorpusCheckReport check_corpus(const std::string& dir, const std::string& solver, int threads);

}  // namespace trex::ordata
