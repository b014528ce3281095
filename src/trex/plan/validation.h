// Published training runs re-predicted by the planner (configs/validation/*.toml, format in
// docs/plan.md): each file states the model (a config path or inline tables), the cluster and
// node count, the run, the strategy, and the reported figure with its source and the FLOP
// convention that source used. The error is predicted / reported - 1 on throughput (MFU under
// the source's convention, or tokens/s per device, which is the same ratio).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trex/model/accounting.h"
#include "trex/plan/predict.h"

namespace trex::plan {

// Which split a run belongs to, decided by its name alone before any factor was set: the
// held-out runs never inform a cluster, stack or scale factor (docs/plan.md, "Validation").
enum class Split { kFit, kHeldOut };
const char* to_string(Split s);
Split split_of(const std::string& run_name);  // held out when FNV-1a-64(name) mod 10 < 3

// The split of a run from a publication added from session 12 on: the whole publication goes
// into one split, held out when FNV-1a-64 of its source key (source_key below) mod 10 < 3, so a
// held-out publication has no fit run and its rows are evidence independent of the fit sources.
// The 14 publications present before (name_split_sources) keep the per-run split_of rule: their
// splits were fixed before their factors were set and stay as they were.
Split split_of_source(const std::string& key);
// The key as hashed and compared: a repository key ("owner/repo") lowercased, since GitHub
// ignores case there; an arXiv key as written.
std::string canonical_source_key(const std::string& key);
const std::vector<std::string>& name_split_sources();
// Whether key is one of name_split_sources, compared as canonical_source_key.
bool is_name_split_source(const std::string& key);
Split split_for(const std::string& run_name, const std::string& key);

// The publication a run's figure comes from, read from the start of its `source` field:
// "arXiv <id>" for a paper, "<owner>/<repo>" for a repository (every file of one repository is
// one source: its tables share recipes and software). Runs of one source are not independent
// of each other, so a held-out run whose source also has fit runs tests the factors less than
// one whose source has none ("independent sources" in the held-out slice table). Empty when
// the field starts with neither form (load_validation_case rejects such a file).
std::string source_key(const std::string& source);

struct ValidationCase {
  std::string name;
  Split split = Split::kFit;
  std::string file;
  std::string source;
  std::string source_key;  // source_key(source)
  std::string notes;
  model::ModelConfig model;
  Cluster cluster;
  Run run;
  Strategy strategy;
  // recompute = "auto": the source does not state it, so the lightest recomputation that fits
  // (none, selective, norm-act, moe, then full recomputation of 1, 2, ... layers per pipeline
  // chunk), as a recipe's author would choose.
  bool recompute_auto = false;
  // [validation] stated_recompute: the recomputation the source says the run used, where the
  // strategy cannot state it because trex's memory model needs more (e.g. Llama 3's 8K runs,
  // "without activation checkpointing", with recompute = "auto"). Empty when not given.
  std::optional<Recompute> stated_recompute;
  model::FlopConvention convention = model::FlopConvention::kMegatron;
  double reported_mfu = 0;                 // under `convention`, 0 when given as tokens/s
  double reported_tokens_per_s_device = 0; // 0 when given as MFU
};

struct ValidationResult {
  ValidationCase c;
  Prediction prediction;
  double predicted = 0;  // in the reported unit
  double reported = 0;
  double error = 0;      // predicted / reported - 1
  bool mfu = true;       // unit: MFU (true) or tokens/s per device
  // The run fits only with more recomputation than its source states: predicted with
  // c.stated_recompute it does not fit, with the strategy evaluated it does. A failure of the
  // memory model (issue 17), counted beside the runs predicted not to fit.
  bool more_recompute_than_stated = false;
};

// Error statistics over a set of results (one row of the slice table).
struct ErrorSummary {
  std::string slice;
  long runs = 0;
  double mean_abs = 0;     // mean |error|
  double median_abs = 0;
  double within_10 = 0;    // share of runs within +-10%
  double within_20 = 0;    // share of runs within +-20%
  double mean_signed = 0;  // mean error (sign: optimistic when > 0)
  double worst = 0;        // largest |error|
  long not_fit = 0;        // runs that happened but are predicted not to fit
  long more_recompute = 0; // runs that fit only with more recomputation than stated (unweighted)
  long sources = 0;        // distinct publications (canonical_source_key) among the runs
};
ErrorSummary summarize(const std::string& slice, const std::vector<const ValidationResult*>& rows);
// The same statistics with each publication weighted equally: a run of a source with k runs in
// `rows` weighs 1 / (sources x k), so one large source cannot carry the figures. The median is
// the weighted median (the smallest |error| whose cumulative weight reaches one half); worst and
// not_fit are over the runs, unweighted.
ErrorSummary summarize_by_source(const std::string& slice, const std::vector<const ValidationResult*>& rows);

// How much of a split one publication is: its number of sources, and the one with the most runs
// (ties: the first by canonical key).
struct SourceMix {
  long runs = 0;
  long sources = 0;
  std::string largest;     // the largest source's key, as its first run in the split spells it
  long largest_runs = 0;
};
SourceMix source_mix(const std::vector<ValidationResult>& results, Split split);

// The slice table of one split: all, dense/MoE, device, stack, source (source_key), scale
// (devices <= 64, <= 512, <= 4096, more). The held-out table's second row is always
// kIndependentSlice: its runs whose source has no run in the fit split (0 runs when none).
inline constexpr const char* kIndependentSlice = "independent sources (no fit run)";
// Two more rows in each table, after those: the split without its largest source (source_mix),
// and the split with each source weighted equally (summarize_by_source).
inline constexpr const char* kWithoutLargestSlice = "all but the largest source";
inline constexpr const char* kSourceWeightedSlice = "source-weighted (each source 1)";
// A split with no run gives one row, "all", with 0 runs.
std::vector<ErrorSummary> slice_table(const std::vector<ValidationResult>& results, Split split);
std::string scale_bucket(long devices);

ValidationCase load_validation_case(const std::string& path);
// Every *.toml under dir, sorted by name.
std::vector<ValidationCase> load_validation_dir(const std::string& dir);
ValidationResult evaluate(const ValidationCase& c);

}  // namespace trex::plan
