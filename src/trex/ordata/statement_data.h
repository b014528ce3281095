// The statement's data block: the numbers a statement gives, in the order it gives them, each
// named for its role, and which of the model's coefficients, bounds and right-hand sides each
// name stands for.
//
// The miniature recipe's SFT answer can begin with this block (program style "statement-data",
// config.h): `dining_chair_profit = 45` for every table cell and every number of a fact, in
// statement order, then the formulation written against those names. Writing the block is an
// in-order copy plus naming each number from the words beside it, which a small model learns,
// where a formulation with the numbers inline needs a copy keyed by role from anywhere in the
// statement, which it did not learn (bench/results/recipe/README.md).
//
// Order: the story is rendered once more with markers around every numeric table cell and
// every fact (render.h's templates copy cells and facts verbatim), so the order is the
// statement's own whatever the template. Names: a cell is named by its row and column
// ("dining_chair" + "carpentry_time"); a number in a fact by the model entry it fills, the one
// whose row and variable words the fact's words share most ("carpentry_time_max" for the
// right-hand side of row carpentry_time), or by the fact's own words where no entry holds it.
// Each model entry then takes the datum with its value whose words share most with the entry's
// row and variable names (the first such in statement order on a tie); an entry whose value no
// datum holds (1, 0, an implied number) stays a literal. Values are compared exactly: a datum
// is parsed from the text num() printed, so the program reads back to the same model.
#pragma once

#include <string>
#include <vector>

#include "trex/lp/model.h"
#include "trex/ordata/story.h"

namespace trex::ordata {

struct Datum {
  std::string name;  // a Python identifier, unique in the program
  double value = 0;
  std::string text;  // as the statement prints it
};

// The data block and, per model entry, the name written in its place ("" = the literal).
// An entry whose value is negative takes the datum of its absolute value, written "-name".
struct ProgramData {
  std::vector<Datum> data;                         // statement order
  std::vector<std::string> cost, lower, upper;     // per variable
  std::vector<std::vector<std::string>> coef;      // per row, per term
  std::vector<std::string> row_lower, row_upper;   // per row
};

// REQUIRES: `statement` == render_statement(story, tmpl, concise) and `model` the instance's
// model. Throws std::logic_error if the marked rendering does not reproduce the statement
// (a template that no longer copies cells or facts verbatim).
ProgramData statement_data(const Story& story, int tmpl, bool concise, const lp::Model& model,
                           const std::string& statement);

}  // namespace trex::ordata
