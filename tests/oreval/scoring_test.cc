// Comparator modes, sentinel answers and error classes.
#include "trex/oreval/scoring.h"

#include <gtest/gtest.h>

#include "trex/util/error.h"

namespace trex::oreval {
namespace {

TEST(Scoring, Modes) {
  EXPECT_TRUE(values_match(100.0000005, 100, Comparator::kAbsolute));
  EXPECT_FALSE(values_match(100.000002, 100, Comparator::kAbsolute));
  EXPECT_TRUE(values_match(104.4, 100, Comparator::kOrlm));   // 104 vs 100: within 5%
  EXPECT_FALSE(values_match(105.6, 100, Comparator::kOrlm));  // 106 vs 100
  EXPECT_TRUE(values_match(0.4, 0, Comparator::kOrlm));       // both round to 0
  EXPECT_TRUE(values_match(1e6 + 0.5, 1e6, Comparator::kSirl));
  EXPECT_FALSE(values_match(1e6 + 2, 1e6, Comparator::kSirl));
  EXPECT_TRUE(values_match(5.00009, 5, Comparator::kResocratic));
  EXPECT_FALSE(values_match(5.0002, 5, Comparator::kResocratic));
  EXPECT_EQ(comparator_from_string("sirl"), Comparator::kSirl);
  EXPECT_THROW(comparator_from_string("fuzzy"), InputError);
}

TEST(Scoring, StatusAnswers) {
  using lp::SolveStatus;
  Answer infeasible{AnswerKind::kInfeasible, 0}, none{AnswerKind::kNoSolution, 0}, ten{AnswerKind::kNumber, 10};
  EXPECT_EQ(classify_solution(SolveStatus::kInfeasible, 0, infeasible, Comparator::kAbsolute), ErrorClass::kCorrect);
  EXPECT_EQ(classify_solution(SolveStatus::kUnbounded, 0, none, Comparator::kAbsolute), ErrorClass::kCorrect);
  EXPECT_EQ(classify_solution(SolveStatus::kOptimal, 3, none, Comparator::kAbsolute), ErrorClass::kWrongObjective);
  EXPECT_EQ(classify_solution(SolveStatus::kInfeasible, 0, ten, Comparator::kAbsolute), ErrorClass::kInfeasible);
  EXPECT_EQ(classify_solution(SolveStatus::kOptimal, 10, ten, Comparator::kAbsolute), ErrorClass::kCorrect);
  EXPECT_EQ(classify_solution(SolveStatus::kOptimal, 11, ten, Comparator::kAbsolute), ErrorClass::kWrongObjective);
  EXPECT_EQ(classify_solution(SolveStatus::kTimeLimitNoSolution, 0, ten, Comparator::kAbsolute), ErrorClass::kTimeout);
}

// A numeric answer against an unbounded model is its own class, not a runtime error.
TEST(Scoring, UnboundedIsItsOwnClass) {
  using lp::SolveStatus;
  Answer ten{AnswerKind::kNumber, 10};
  EXPECT_EQ(classify_solution(SolveStatus::kUnbounded, 0, ten, Comparator::kAbsolute), ErrorClass::kUnbounded);
  EXPECT_STREQ(to_string(ErrorClass::kUnbounded), "unbounded");
  EXPECT_EQ(classify_solution(SolveStatus::kError, 0, ten, Comparator::kAbsolute), ErrorClass::kRuntimeError);
}

// "Infeasible or unbounded" is an undecided status: it matches only a "no solution" answer,
// unless the lenient status mode is asked for.
TEST(Scoring, UndecidedStatusMatchesOnlyNoSolution) {
  using lp::SolveStatus;
  Answer infeasible{AnswerKind::kInfeasible, 0}, unbounded{AnswerKind::kUnbounded, 0}, none{AnswerKind::kNoSolution, 0};
  const auto undecided = SolveStatus::kInfeasibleOrUnbounded;
  EXPECT_EQ(classify_solution(undecided, 0, none, Comparator::kAbsolute), ErrorClass::kCorrect);
  EXPECT_EQ(classify_solution(undecided, 0, infeasible, Comparator::kAbsolute), ErrorClass::kWrongObjective);
  EXPECT_EQ(classify_solution(undecided, 0, unbounded, Comparator::kAbsolute), ErrorClass::kWrongObjective);
  EXPECT_EQ(classify_solution(undecided, 0, infeasible, Comparator::kAbsolute, true), ErrorClass::kCorrect);
  EXPECT_EQ(classify_solution(undecided, 0, unbounded, Comparator::kAbsolute, true), ErrorClass::kCorrect);
  EXPECT_EQ(classify_solution(SolveStatus::kInfeasible, 0, unbounded, Comparator::kAbsolute, true), ErrorClass::kWrongObjective);
  EXPECT_EQ(classify_solution(SolveStatus::kUnbounded, 0, infeasible, Comparator::kAbsolute), ErrorClass::kWrongObjective);
  EXPECT_EQ(classify_solution(SolveStatus::kUnbounded, 0, unbounded, Comparator::kAbsolute), ErrorClass::kCorrect);
}

}  // namespace
}  // namespace trex::oreval
