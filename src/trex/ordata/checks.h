// The contract checks and quality gates a sample passes before it can be exported.
//
//   lp_parses, gurobipy_parses  the formulations read back into models
//   contract                    variable counts by type and nonnegative bounds as the contract says
//   direction                   the objective sense of the formulation and of the statement agree
//   reviewer                    every number in the statement is used by the formulation, and
//                               every coefficient, bound and right-hand side is stated
//   cleaner                     the statement is normalized text and does not leak the answer
//   validation                  each reconstruction has the reference status and objective:
//                               by certificate when it equals the reference model, else re-solved
// Each failure names its rejection reason (sample.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "trex/lp/solver.h"
#include "trex/ordata/family.h"
#include "trex/ordata/sample.h"

namespace trex::ordata {

// A number as a statement writes it: text[begin, end) is a run of digits with an optional decimal
// part ("45", "3.5"), not part of a word ("m3", "x9", "9b", "x_9"). list_marker: it opens a line as
// "2. ", a list's numbering, not data.
struct NumberSpan {
  size_t begin, end;
  bool list_marker;
};
// Every number of `text`, in order: the one scanner behind stated_numbers() (the reviewer) and
// the statement-data block (statement_data.cc), so both read the same numbers.
std::vector<NumberSpan> number_spans(const std::string& text);

// The numbers a statement states: number_spans() except list markers, as absolute values.
std::set<double> stated_numbers(const std::string& statement);
// The numbers a formulation uses: |coefficients|, |costs|, finite |bounds| and |right-hand
// sides|, except 0 and 1 (structure, not data).
std::set<double> formulation_numbers(const lp::Model& model);

// The reviewer: "" when both directions hold, else the reason and *detail.
std::string review_numbers(const std::string& statement, const lp::Model& model,
                           const std::vector<double>& implied, std::string* detail);

struct Reference {
  const lp::Model* model;
  lp::SolveStatus status;
  double objective;
  const std::vector<double>* x;
  const std::vector<double>* duals;  // LP row duals (minimized form) or nullptr
};

// Runs every check on `sample` (statement and formulations filled in), appending to
// sample.checks; sets sample.rejection and rejection_detail at the first failure.
// `resolver` re-solves a reconstruction that differs from the reference.
void run_checks(const Instance& inst, const Reference& ref, const lp::Solver& resolver, Sample& sample);

}  // namespace trex::ordata
