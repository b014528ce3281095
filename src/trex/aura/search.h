// K-Search: a branchable, rollbackable tree of kernel configurations.
//
// Every node is one measured candidate: a configuration reached from its parent by one move
// (a parameter stepped by one or two places in its candidate list, or a variant switch such as
// the GEMM micro-kernel), passed through the evaluator, which runs the kernel gate before it
// times anything. The search keeps a checkpoint, the best verified configuration so far:
//   - a candidate that fails the gate is recorded as failed and never committed;
//   - a candidate faster than the checkpoint by at least min_gain is committed (it becomes the
//     checkpoint, and the search continues from it, the same move first);
//   - any other candidate is rolled back: the search returns to the checkpoint and tries its
//     next move. When the checkpoint has no untried move, the search branches from the next best
//     measured node that has some (a dead end rolls back to there).
// Moves are ranked by the performance model's prediction, after the moves that skills or the
// last commit recommend. With a skill prior (prior.h), a node's moves are ranked by the settled
// time ratio the skills measured for that move, then (where no effect is settled) by the
// skills' predicted time of the neighbour (SkillPrior::predicted), the model breaking ties, and a neighbour or seed that the prior's rules rule
// out is never measured: pruning happens before evaluation, so it costs no budget. The prior
// orders and prunes the moves only once its own seed proved it (the seed of origin "skills"
// committed over the start; the built-in seed's commit does not count);
// otherwise the moves follow the model, as without skills. The budget counts measurements (gate
// failures included); a configuration is reached once.
// Confirmation (SearchOptions::confirm > 0, off by default): a candidate that would commit on a gain
// smaller than `confirm` (its time between checkpoint * (1 - confirm) and checkpoint * (1 -
// min_gain)) lies inside the noise of one measurement, so it is measured again, and the checkpoint
// too while it has fewer measurements than the candidate; each node's time is then the mean of its
// measurements, and the candidate commits only if that mean still beats the checkpoint's by
// min_gain. Every re-measurement counts against the budget; with no budget left for it the
// candidate is judged on its one measurement, as without confirmation. Why (session 13): at two
// threads one pass of a configuration can be 10-30% off its other passes (a burst), and a commit
// on such a draw steers the rest of the search from a configuration that is not faster.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trex/aura/choice_ip.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"

namespace trex::aura {

class SkillPrior;  // prior.h

struct Measurement {
  bool passed = false;   // the gate's verdict
  double seconds = 0;    // median time of one call (when passed)
  std::string message;   // the gate's first problem, or timing detail
};

// Measures one configuration (live: gate then timing; tests: a synthetic cost).
using Evaluator = std::function<Measurement(const Config&)>;

enum class NodeState { kCommitted, kRolledBack, kFailed };
const char* to_string(NodeState s);

struct SearchNode {
  int id = 0, parent = -1;
  Config config;
  std::string origin;  // "start", "builtin", "skill #N", "skills", "calibrated", "move"
  std::string change;  // "kc 256->384"
  Measurement m;         // with confirmation, m.seconds is the mean of its measurements
  NodeState state = NodeState::kRolledBack;
  int measurements = 1;  // how often this configuration was timed (confirmation adds to it)
  int spent = 0;         // measurements of the whole search once this node was decided
};

struct SearchSeed {
  Config config;
  std::string origin;
};

struct SearchOptions {
  int budget = 30;          // measured candidates, >= 1
  double min_gain = 0.01;   // a commit needs seconds < checkpoint * (1 - min_gain)
  std::vector<SearchSeed> seeds;                    // measured after the start, in order
  std::set<std::pair<std::string, int>> preferred;  // (parameter, direction +1/-1) from skills
  const SkillPrior* prior = nullptr;                // order and pruning from skills' observations
  double confirm = 0;  // re-measure a commit whose gain is below this (0: never; see above)
};

struct SearchResult {
  std::vector<SearchNode> nodes;  // in measurement order
  int best = -1;                  // the final checkpoint (-1: nothing passed the gate)
  int checkpoints = 0;            // commits
  int measurements = 0;           // every evaluation, re-measurements included (<= budget)
  int confirmed = 0, refuted = 0;  // confirmations that kept / undid a commit
};

SearchResult k_search(const TuneTarget& target, const ChoiceProblem& model, const SearchSeed& start,
                      const Evaluator& evaluate, const SearchOptions& options);

// A gain over the built-in checked before it is written. The built-in's time that the search
// compares against is one measurement, the process's first (tune profiles it before anything
// else and reuses it); on a shared machine one slow burst there reads as a gain of whatever is
// measured later (session 14, quiet lane at load 17: gemm 2048x512x512's built-in profiled at
// 9.1 ms, a "1.60x" for mc 288; the whole space measured in one run put the built-in at 5.8 ms,
// 7% from the best, and a step with that tuning file ran 0.976x the untuned one). So the
// built-in and the candidate are measured again in turn, `rounds` times each (built-in,
// candidate, candidate, built-in, ...: a drift in the load falls on both), and the gain is the
// ratio of the medians; it stands when it is at least 1 + min_gain. A failed gate on either
// side, or rounds < 1, verifies nothing.
struct Verification {
  double builtin_s = 0, candidate_s = 0, gain = 0;  // medians of the re-measurements, their ratio
  int measurements = 0;
  bool verified = false;
  std::string message;  // why not, when not
};
Verification verify_gain(const Config& builtin, const Config& candidate, const Evaluator& evaluate, int rounds,
                         double min_gain);

// The observations a tune's skill records (skills.h): every passed node of `r`, and the built-in,
// as time over the fastest. `builtin_s` is the built-in's one search measurement (the profile);
// after a verification that completed (both medians measured), the built-in's time is the best
// node's time x the verified gain instead, because that single measurement is exactly what the
// verification found unreliable, and later priors would learn the built-in's neighbourhood from
// it (session 14: 9.1 ms profiled against 5.8 ms in one run). A verification stopped by a
// failed gate leaves the built-in out rather than record the number it distrusts.
std::vector<Observation> tune_observations(const SearchResult& r, const Config& builtin, double builtin_s,
                                           const Verification& v);

// Measures every configuration of the space (at most `limit`; 0: all), in index order.
std::vector<std::pair<Config, Measurement>> exhaustive(const TuneTarget& target,
                                                       const Evaluator& evaluate, size_t limit = 0);

// "kc 256->384, mc 504->96" (parameters that differ), or "same".
std::string describe_change(const Config& from, const Config& to);

}  // namespace trex::aura
