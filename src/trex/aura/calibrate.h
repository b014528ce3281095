// Skills that calibrate the performance model instead of proposing configurations.
//
// The model (target.cc) prices a configuration from the hardware description's figures: the
// FMA peaks (AVX-512, AVX2), the read bandwidth of L1, L2, L3 and memory, and per-event times (a
// GEMM micro-kernel call per line of its tile, a pool job, a block), and the row model's factor
// of a non-temporal write against a normal store's. A probe measures the rates
// in isolation; a kernel reaches others, and the event times were fitted on another machine. The
// skills of other shapes carry what the model got wrong there: their observations are measured
// configurations with their time over that search's best. calibrate_model() fits one multiplier
// per figure so the model ranks those observations as they were measured:
//   residual of an observation = ln(its relative time) - ln(the model's cost of it),
//   centred per shape (a shape's own scale is free: skills record times relative to their best),
//   weighted 1 / relative (the configurations near the best decide a search more than the ones
//   far off), and the error is the weighted mean square, plus `ridge` x sum of (log2 multiplier)^2
//   (every figure scaled by the same factor changes no ranking; the ridge keeps the figures as
//   probed where the evidence does not move them).
// Coordinate descent over a log grid (`steps_per_octave` steps, at most `max_factor` either way;
// the write factor 32 steps an octave within a factor of 2, since a store kind turns on a few %),
// sweep after sweep until no figure moves. The fitted description then gives the target a new
// integer program (performance_model) whose optimum and ranked list seed a search: what transfers
// between shapes is the machine's behaviour, not a configuration (whose best moves with the shape).
#pragma once

#include <string>
#include <vector>

#include "trex/aura/choice_ip.h"
#include "trex/aura/hardware.h"
#include "trex/aura/search.h"
#include "trex/aura/skills.h"
#include "trex/aura/target.h"

namespace trex::aura {

struct CalibrationOptions {
  double ridge = 2e-4;        // per (log2 multiplier)^2
  int steps_per_octave = 4;   // grid of multipliers 2^(k / steps)
  double max_factor = 16;     // multipliers within [1 / max_factor, max_factor]
  int max_sweeps = 6;
  double cap_relative = 4;    // observations slower than this over their best count as this
  // Weight of the decision term: the mean over shapes of ln(the measured relative time of the
  // observation the model ranks first), added to the fit's error (0: the fit alone).
  double pick = 0;
};

// A shape's measured configurations, each as time over the shape's best (a skill's observations).
struct ShapeEvidence {
  TuneTarget target;
  std::vector<Observation> observations;
};

struct Calibration {
  AuraHardware hw;                                   // the description with the fitted figures
  std::vector<std::pair<std::string, double>> factors;  // every figure with a multiplier != 1
  double error_before = 0, error_after = 0;          // weighted rms of the centred log residual
  size_t shapes = 0, observations = 0;
  // "bw_l2 x0.59, gemm_call_line_s x2 (rms 0.081 -> 0.034, 5 shapes, 150 observations)";
  // "as probed (...)" when nothing moved.
  std::string text() const;
};

// The evidence a calibration of t's model may learn from: the observations of those `skills`
// that are of t's kernel and measured on hardware with hw's features, whatever their roofline
// regime (the model prices both regimes with the same figures), of OTHER shape classes than t's
// (a skill of t's own class is what the search is about to measure: fitted to it, the
// calibration would not be learned from other shapes); shapes this build cannot make a target
// of are left out.
std::vector<ShapeEvidence> calibration_evidence(const std::vector<Skill>& skills, const TuneTarget& t,
                                                const AuraHardware& hw);

// Fits the figures to the evidence (above). With no evidence, or none with two observations or
// more, the description comes back as it is.
Calibration calibrate_model(const std::vector<ShapeEvidence>& evidence, const AuraHardware& hw,
                            const CalibrationOptions& options = {});

// Up to n configurations of t's space, cheapest first under `model` (forbidden ones left out;
// ties in index order). The first is the integer program's optimum up to ties.
std::vector<Config> model_ranked(const TuneTarget& t, const ChoiceProblem& model, size_t n);

// How `trex aura tune` uses a calibration: the fit with the decision term at weight 1 (session
// 27, bench/results/aura_s27/README.md section 2: on the 11 cells where the start is wrong and
// the table can tell, the fit alone saved nothing; with the decision term the hedge below needed
// 0.85 / 0.78 of the cold search's evaluations to 3% (fitted to searches / tables); weight 4 gave
// the same).
CalibrationOptions tune_calibration_options();

// The calibrated start of a tune (session 27): calibrates t's model from the skills of other
// shapes (calibration_evidence, calibrate_model) and, where the calibrated program's optimum is
// not the model's start, inserts it as the FIRST seed of `options`: the search measures the
// model's start first and the calibrated start second, then the other seeds (skills, built-in)
// and its moves as without it. A hedge: measured first, the model's start costs one evaluation
// where the calibration is right and keeps the start where it is not (the fit moves figures by
// 2-10x; in the replays two cross-entropy cells searched from the calibrated optimum took 5 -> 9
// and 3 -> 4 evaluations). With no evidence (no skills, or none of another shape class with two
// observations) nothing is changed.
struct CalibratedSeed {
  Calibration calibration;  // shapes == 0: no evidence, options untouched
  Config config;            // the calibrated program's optimum (empty without evidence)
  bool seeded = false;      // config differs from the model's start: measured second
};
CalibratedSeed calibrated_seed(const std::vector<Skill>& skills, const TuneTarget& t, const AuraHardware& hw,
                               const SearchSeed& model_start, SearchOptions& options,
                               const CalibrationOptions& calibration = tune_calibration_options());

}  // namespace trex::aura
