// The skill prior: what earlier searches of the same kernel on other shapes measured, turned
// into an order and pruning rules for a new search, applied before anything is evaluated.
//
// A skill carries its search's observations: every configuration the search measured, as its
// time over the best time of that search (1.0 = the best it found). For a new target, each
// observation is mapped into the target's space, value by value, by the parameter's transfer:
//   - relative: a parameter with shape scales (SpaceParam::scales: GEMM kc to K, a row block
//     to the row or the tensor, mHC's token block to the tokens) may move as a ratio: value x
//     target scale / source scale, to the candidate nearest in log2. Which scale, or the
//     absolute value, is chosen per parameter by the skills themselves: the transfer under which
//     their best values of that parameter, mapped into the target, lie closest together (mean
//     pairwise log2 distance; a tie, or a single skill, takes the first scale). A block that
//     wins at "a quarter of the rows" on every shape transfers as that quarter, one that wins
//     at "16 KiB" whatever the shape as 16 KiB.
//   - absolute: a blocking that covered its whole dimension on the skill's shape
//     (SpaceParam::whole) to the target's whole-dimension value, any other value to the
//     nearest candidate. A choice (micro-kernel, store kind) maps to itself, or, relative to the
//     model (choice_follows_model()), the source's start value to the target's start value and
//     back: "the model's store kind won" transfers as the model's store kind on the new shape,
//     where the model may pick the other kind for a reason the shape gives (it fits the caches).
//     Which of the two is chosen per parameter by the skills' best values as for the scales (the
//     one under which they agree more; a tie takes the model-relative one).
// Then:
//   - move effects: for every pair of a skill's observations that differ in one parameter only
//     (a search's node and its parent are such a pair), the time ratio of the move; per skill
//     the median over its pairs, over skills the geometric mean. A paired ratio cancels what the
//     shapes do not share (their absolute times, the other parameters), so what transfers is
//     the direction and size of a move: "nc 256->whole N: 0.97", "ukernel 3->2: 1.9". Only a
//     settled effect is used (settled_ratio(): enough skills, all on one side by more than a
//     measurement's noise); an unsettled move is left to the model, so noise in the skills
//     cannot reorder the search. The search ranks a node's moves by it (the model breaks ties),
//     skips a move every skill found more than `prune_above` slower, and measures, right after
//     the model's start, that start moved to the skills' consensus and improved by the settled
//     gains (descend(), warm_start()).
//   - consensus per parameter: where at least `min_support` skills' best values of a parameter
//     (mapped into the target) lie within one candidate of each other (a choice without scales:
//     all on the same value), their median; a
//     parameter the skills disagree on (a flat one, where the best is a noise draw) has none.
//   - pruning rules per parameter value: a value is ruled out when at least `min_support`
//     skills measured it and, in every one of them, the best configuration holding it was more
//     than `prune_above` times that skill's best (e.g. the AVX2 micro-kernel next to AVX-512).
//     A configuration holding a ruled-out value is never measured.
//   - predicted(config): the geometric mean over skills of the relative time of their nearest
//     observation (2% per index step away), for ranking whole configurations (ranked()).
// Only skills whose shape falls in the same roofline regime as the target (compute-bound or
// memory-bound, as trace anatomy classifies a kernel) and were measured on the same hardware
// feed the prior: a blocking that wins while streaming from memory says little about one that
// must feed the FMA units, and cache capacities differ between machines.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trex/aura/hardware.h"
#include "trex/aura/search.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"

namespace trex::aura {

struct PriorOptions {
  double prune_above = 1.10;  // a value is ruled out beyond this relative time everywhere
  int min_support = 2;        // skills that must agree before a value is ruled out
  double settled = 0.02;      // a move's effect counts when every skill saw it beyond 2%
};

// One skill's evidence: the target of its shape (its space tells which values covered a whole
// dimension there) and its observations.
struct Evidence {
  TuneTarget source;
  std::vector<Observation> observations;
  // The performance model's start on the source shape and on the target (prior_evidence() fills
  // both; empty: a choice maps to itself).
  Config source_start, target_start;
};

class SkillPrior {
 public:
  SkillPrior() = default;
  // One entry of `evidence` per skill (already filtered to the same kernel, hardware, regime).
  SkillPrior(const TuneTarget& target, const std::vector<Evidence>& evidence, const PriorOptions& options = {});

  bool empty() const { return skills_.empty(); }
  size_t skills() const { return skills_.size(); }
  double predicted(const std::vector<int>& index) const;
  bool pruned(const std::vector<int>& index) const;
  bool ruled_out(size_t p, int v) const;  // value v of parameter p, by the rules
  // The predicted time ratio of moving parameter p from value index v to w (NaN: no skill
  // measured such a pair), and how many skills did.
  double move_ratio(size_t p, int v, int w) const;
  // The ratio the search ranks the move by: the skills' ratio where at least min_support skills
  // measured the move and all agree on its side by more than `settled` (a gain in every one, or
  // a loss in every one); 1 (neutral: the model ranks it) where they disagree or the effect is
  // within the noise of a measurement.
  double settled_ratio(size_t p, int v, int w) const;
  int move_support(size_t p, int v, int w) const;
  // A move every skill that measured it (at least min_support) found beyond prune_above.
  bool move_pruned(size_t p, int v, int w) const;
  // From `from`: every ruled-out value replaced by the nearest allowed one, each parameter with
  // a consensus set to it where that is a settled gain in the skills (a consensus equal to the
  // start's value holds it), then the settled gains (settled_ratio() < 1) applied greedily, best
  // first, each parameter not set or held at most once, never into a pruned configuration.
  std::vector<int> descend(std::vector<int> from) const;
  // Whether descend(from) == to holds with each skill left out in turn (three skills or more;
  // fewer: true): a prediction that one skill's noise moves is not measured.
  bool stable(const std::vector<int>& from, const std::vector<int>& to) const;
  // The rules, "ukernel=2 (3 skills, best 1.31)", one per ruled-out value.
  std::vector<std::string> rules() const;
  // Up to n configurations of the space, not pruned, best predicted first (ties in index order).
  std::vector<std::vector<int>> ranked(size_t n) const;
  // A configuration of `source`'s space as an index into the target's (the mapping above).
  std::vector<int> map_index(const Evidence& source, const Config& c) const;
  // Whether choice parameter p (no scales) transfers relative to the model's choice: the skills'
  // best value that was the model's start there is read as the target's start here (and the
  // target's start value as the source's), instead of as the same value.
  bool choice_follows_model(size_t p) const { return p < follow_model_.size() && follow_model_[p]; }
  // The transfer of parameter p: -1 absolute, k >= 0 relative to SpaceParam::scales[k].
  int transfer(size_t p) const { return p < transfer_.size() ? transfer_[p] : -1; }
  // "block_elems: ratio to 524288" / "kc: absolute", one per parameter with scales.
  std::vector<std::string> transfers() const;
  // The index the skills agree on for parameter p, or -1.
  int consensus(size_t p) const { return p < consensus_.size() ? consensus_[p] : -1; }

 private:
  struct SkillObs {
    std::vector<std::vector<int>> index;  // observations mapped into the target's space
    std::vector<double> relative;
  };
  struct Effect {
    double ratio = 1;      // geometric mean over skills
    int support = 0;       // skills
    double lowest = 1;     // the smallest skill's ratio
    double highest = 1;    // the largest
  };
  const Effect* effect(size_t p, int v, int w) const;
  // Whether moving parameter p from value v to w is a settled gain in the skills: in every skill
  // that measured both, the best configuration holding w beat the best holding v by more than
  // `settled` (true when none measured both: nothing contradicts the consensus).
  bool consensus_gain_settled(size_t p, int v, int w) const;
  void choose_transfers(const std::vector<Evidence>& evidence);
  void choose_choice_transfers(const std::vector<Evidence>& evidence);
  TuneTarget target_;
  PriorOptions options_;
  std::vector<SkillObs> skills_;
  std::vector<std::map<std::pair<int, int>, Effect>> effects_;  // per parameter, (v, w)
  std::vector<std::vector<bool>> ruled_out_;  // per parameter, per value
  std::vector<int> transfer_;                 // per parameter: -1 absolute, else a scale
  std::vector<bool> follow_model_;            // per choice parameter: relative to the model's choice
  std::vector<int> consensus_;                // per parameter: an index, or -1
  std::vector<std::string> rules_;
  std::vector<Evidence> evidence_;            // as given (stable() leaves each out)
};

// The evidence a prior for `t` may learn from: the observations of those `skills` that are of
// t's kernel, measured on hardware with t's features, and whose shape class is in t's roofline
// regime (skills without observations, from a version-1 database, give none).
std::vector<Evidence> prior_evidence(const std::vector<Skill>& skills, const TuneTarget& t, const AuraHardware& hw);

// The performance model's start for t (the integer program's solution), kept per target and
// hardware once solved.
Config model_start(const TuneTarget& t, const AuraHardware& hw);

// A search started by the prior: the root is the model's start, then, where it differs, the
// model's start improved by the moves the skills predict to gain (descend()) as the first seed,
// origin "skills" (the search continues from it when it is faster), unless the prediction is not
// stable (SkillPrior::stable: one skill left out moves it); the search's options take the prior
// (move order and pruning, which k_search uses only once that seed beat the start). Without a
// prior (empty) the root is the model's start and nothing changes.
SearchSeed warm_start(const SkillPrior& prior, const TuneTarget& t, const SearchSeed& model_start,
                      SearchOptions& options);

// The roofline regime of a target from its byte and FLOP counts (no measurement): "compute"
// when the compute bound exceeds the load and store bounds at the level its working set lives
// in, else "memory". A skill's regime is that of its shape class.
std::string roofline_regime(const TuneTarget& t, const AuraHardware& hw);

}  // namespace trex::aura
