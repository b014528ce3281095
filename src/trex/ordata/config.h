// What a corpus run makes: the family mixture, feasibility shares, counts and thresholds.
//
// A config comes from a TOML file (configs/data/default.toml documents every key) and/or the
// command line; either way validate_config() runs before any work, so a setting the
// contracts cannot honour (a range outside a contract, infeasible instances from a family
// that only makes feasible ones) is an error naming the file, line and key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/ordata/contract.h"
#include "trex/ordata/family.h"

namespace trex::ordata {

struct FamilyMix {
  const Family* family = nullptr;
  double weight = 1;
  ParamRanges ranges;  // the contract's defaults with overrides applied
  // Share of each mode among this family's samples: feasible, infeasible, unbounded.
  double mode_share[3] = {1, 0, 0};
};

struct CorpusConfig {
  std::vector<FamilyMix> families;
  uint64_t seed = 1;
  long count = 100;                 // samples to export
  double concise_share = 0.25;      // statements in the concise variant
  double infeasible_share = 0.10;   // for families that can make infeasible instances
  double unbounded_share = 0.05;    // for families that can make unbounded instances
  double near_threshold = 0.8;      // MinHash Jaccard estimate at or above which text is a near duplicate
  int block_size = 250;             // candidates per block (the unit of sharding and resume)
  double solve_time_limit = 10;     // seconds per reference solve
  // The SFT view's assistant answer (export.h): kSftFull, the mathematical model, the gurobipy
  // program and the result; kSftProgram, the program alone, for a model too small to write the
  // whole answer (the miniature recipe, configs/recipe/or-miniature.toml).
  enum SftView { kSftFull, kSftProgram };
  SftView sft_view = kSftFull;
  // The gurobipy program's style (reconstruct.h): kProgramPlain, every number inline;
  // kProgramStatementData, the statement's numbers first as named data in the statement's order,
  // then the formulation written against the names (statement_data.h).
  enum ProgramStyle { kProgramPlain, kProgramStatementData };
  ProgramStyle program_style = kProgramPlain;
  std::string source = "<defaults>";  // where the config came from, for messages and provenance
};

// Every family with weight 1 and the default shares.
CorpusConfig default_config();
// Reads a TOML config. Throws InputError("FILE", line, ...) on any bad key or value.
CorpusConfig load_config(const std::string& path);
// Keeps only the named families (comma-separated); throws InputError::field("--families", ...)
// for an unknown name.
void select_families(CorpusConfig& config, const std::string& names);
// Fills each family's mode shares from the global shares where the config did not set them,
// and checks the whole config. Throws InputError.
void finalize_config(CorpusConfig& config);

// A stable text form of everything that determines the samples (not threads or shards),
// stored with a run so that a resume can refuse a different configuration.
std::string config_fingerprint(const CorpusConfig& config);

}  // namespace trex::ordata
