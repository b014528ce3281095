// The statement-data program style: the data block lists the statement's numbers in the order
// the statement gives them, each named for its role, and the program written against the names
// reads back to the instance's model (so it solves to the same objective).
#include <gtest/gtest.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "trex/lp/lp_format.h"
#include "trex/ordata/family.h"
#include "trex/ordata/family_util.h"
#include "trex/ordata/reconstruct.h"
#include "trex/ordata/render.h"
#include "trex/ordata/statement_data.h"
#include "trex/util/error.h"

namespace trex::ordata {
namespace {

Instance statement_data_instance(const Family& f, uint64_t seed, int industry = 0) {
  Rng rng(seed);
  return f.generate(default_ranges(f.contract()), FeasibilityMode::kFeasible, industry, rng);
}

bool is_number_char(char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }

// The position of `number` as a whole token in `text` at or after `from`, or npos.
size_t find_token(const std::string& text, const std::string& number, size_t from) {
  for (size_t p = text.find(number, from); p != std::string::npos; p = text.find(number, p + 1)) {
    bool before = p > 0 && (std::isalnum(static_cast<unsigned char>(text[p - 1])) || text[p - 1] == '.');
    size_t end = p + number.size();
    bool after = end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                       (text[end] == '.' && end + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[end + 1]))));
    if (!before && !after) return p;
  }
  return std::string::npos;
}

// How many numbers the story's tables and facts hold (what the data block must list).
size_t story_numbers(const Story& s) {
  size_t n = 0;
  for (const Table& t : s.tables)
    for (const auto& row : t.cells)
      for (const std::string& c : row) {
        double v;
        auto [p, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
        n += !c.empty() && std::isdigit(static_cast<unsigned char>(c[0])) && ec == std::errc() && p == c.data() + c.size();
      }
  for (const std::string& f : s.facts)
    for (size_t i = 0; i < f.size();) {
      if (!std::isdigit(static_cast<unsigned char>(f[i])) || (i > 0 && (std::isalnum(static_cast<unsigned char>(f[i - 1])) || f[i - 1] == '.'))) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < f.size() && std::isdigit(static_cast<unsigned char>(f[j]))) ++j;
      if (j + 1 < f.size() && f[j] == '.' && std::isdigit(static_cast<unsigned char>(f[j + 1])))
        for (++j; j < f.size() && std::isdigit(static_cast<unsigned char>(f[j]));) ++j;
      n += j >= f.size() || !std::isalnum(static_cast<unsigned char>(f[j]));
      i = j;
    }
  return n;
}

// The numbers written in the formulation part of a program (after the data block, before
// m.optimize()), outside quoted names.
std::vector<double> formulation_literals(const std::string& program) {
  std::vector<double> out;
  size_t start = program.find("m = gp.Model("), end = program.find("m.optimize()");
  bool quoted = false;
  for (size_t i = start; i < end; ++i) {
    char c = program[i];
    if (c == '"') quoted = !quoted;
    if (quoted || !std::isdigit(static_cast<unsigned char>(c))) continue;
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(program[i - 1])) || program[i - 1] == '_' || program[i - 1] == '.')) {
      while (i < program.size() && (std::isalnum(static_cast<unsigned char>(program[i])) || program[i] == '.')) ++i;
      --i;
      continue;
    }
    size_t j = i;
    while (j < program.size() && (is_number_char(program[j]) || program[j] == 'e')) ++j;
    double v = 0;
    std::from_chars(program.data() + i, program.data() + j, v);
    out.push_back(v);
    i = j - 1;
  }
  return out;
}

TEST(StatementData, EveryFamilyAndTemplateListsTheStatementsNumbersInOrderAndReadsBackToTheModel) {
  long programs = 0, named = 0, literal = 0;
  for (const Family* f : all_families())
    for (uint64_t seed : {1, 2}) {
      Instance inst = statement_data_instance(*f, seed, int(seed % f->industries().size()));
      const size_t expected = story_numbers(inst.story);
      for (int tmpl = 0; tmpl < kNumTemplates; ++tmpl)
        for (bool concise : {false, true}) {
          const std::string statement = render_statement(inst.story, tmpl, concise);
          const std::string where = f->contract().family + " seed " + std::to_string(seed) + " " + template_name(tmpl) +
                                    (concise ? " concise" : "");
          ProgramData data = statement_data(inst.story, tmpl, concise, inst.model, statement);
          EXPECT_EQ(data.data.size(), expected) << where;
          // In the statement's order: each datum's text found as a token after the one before.
          size_t pos = 0;
          for (const Datum& d : data.data) {
            size_t p = find_token(statement, d.text, pos);
            ASSERT_NE(p, std::string::npos) << where << ": " << d.name << " = " << d.text << " not after offset " << pos;
            pos = p + d.text.size();
            EXPECT_EQ(num(d.value), d.text) << where;
          }
          const std::string program = write_gurobipy(inst.model, &data);
          std::string why;
          EXPECT_TRUE(lp::same_model(inst.model, read_gurobipy(program), &why)) << where << ": " << why << "\n" << program;
          // The block opens the program, one `name = number` line a datum, in order.
          std::string block;
          for (const Datum& d : data.data) block += d.name + " = " + d.text + "\n";
          if (!data.data.empty()) {
            EXPECT_NE(program.find("from gurobipy import GRB\n\n# Data, in the order the statement gives it\n" + block + "\nm = gp.Model("),
                      std::string::npos) << where << "\n" << program;
          }
          // No number a datum holds is left inline in the formulation (0 and 1 are never named).
          for (double v : formulation_literals(program)) {
            bool held = false;
            for (const Datum& d : data.data) held = held || d.value == v;
            if (v != 0 && v != 1) {
              EXPECT_FALSE(held) << where << ": " << v << " left inline\n" << program;
            }
          }
          ++programs;
          for (int r = 0; r < inst.model.num_rows(); ++r)
            for (size_t t = 0; t < data.coef[size_t(r)].size(); ++t) {
              double c = std::fabs(inst.model.row(r).terms[t].coef);
              if (c != 0 && c != 1) (data.coef[size_t(r)][t].empty() ? literal : named)++;
            }
        }
    }
  EXPECT_GT(programs, 100);
  // Coefficients other than 0 and 1 are mostly stated data, written by name; the rest are
  // numbers no datum holds (the model derives them: big-M, MTZ's n - 1; 8580 named against
  // 1056 literal over these programs when written).
  EXPECT_GT(named, 4 * literal) << named << " named, " << literal << " literal";
}

// product_mix in the report template: the table row by row (profit, resource use, market
// limit), then the facts, each resource's availability named after the row it bounds.
TEST(StatementData, ProductMixNamesCellsByRowAndColumnAndFactsByTheRowTheyBound) {
  Instance inst = statement_data_instance(*find_family("product_mix"), 7);
  const Story& s = inst.story;
  const std::string statement = render_statement(s, 0, false);
  ProgramData data = statement_data(s, 0, false, inst.model, statement);
  const Table& t = s.tables.at(0);
  size_t k = 0;
  for (size_t r = 0; r < t.rows.size(); ++r)
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (t.cells[r][c] == "unlimited") continue;
      ASSERT_LT(k, data.data.size());
      std::string col = t.columns[c].substr(0, t.columns[c].find(" ("));
      EXPECT_EQ(data.data[k].name, key(t.rows[r]) + "_" + key(col)) << k;
      for (char& ch : data.data[k].name) EXPECT_FALSE(std::isupper(static_cast<unsigned char>(ch)));
      EXPECT_EQ(data.data[k++].text, t.cells[r][c]);
    }
  // Then one datum per fact: "The week offers 480 hours of carpentry time." -> carpentry_time_max.
  ASSERT_EQ(data.data.size(), k + s.facts.size());
  const std::vector<std::string> labels = inst.model.row_labels();
  for (size_t r = 0; r < s.facts.size(); ++r) {
    EXPECT_EQ(data.data[k + r].name, labels[r] + "_max") << s.facts[r];
    EXPECT_EQ(data.data[k + r].value, inst.model.row(int(r)).upper);
    EXPECT_EQ(data.row_upper[r], data.data[k + r].name);
  }
  // The objective uses the profit column by name, each product its own.
  const std::string program = write_gurobipy(inst.model, &data);
  for (size_t r = 0; r < t.rows.size(); ++r)
    EXPECT_NE(program.find(key(t.rows[r]) + "_profit * make[\"" + key(t.rows[r]) + "\"]"), std::string::npos) << program;
}

TEST(StatementData, TheMarkedRenderingMustBeTheStatement) {
  Instance inst = statement_data_instance(*find_family("knapsack"), 3);
  EXPECT_THROW(statement_data(inst.story, 0, false, inst.model, "not the statement\n"), std::logic_error);
}

TEST(StatementData, ReaderRejectsUnknownDuplicateAndClashingDataNames) {
  const std::string head = "import gurobipy as gp\nfrom gurobipy import GRB\n\ncap = 5\n";
  const std::string tail = "m = gp.Model(\"t\")\nx = m.addVar(lb=0, ub=GRB.INFINITY, vtype=GRB.CONTINUOUS, name=\"x\")\n";
  // Good: a name as a coefficient, a right-hand side and (negated) a bound.
  lp::Model ok = read_gurobipy(head + tail + "m.setObjective(-cap * x, GRB.MINIMIZE)\nm.addConstr(cap * x <= cap, name=\"c\")\n");
  EXPECT_EQ(ok.var(0).cost, -5);
  EXPECT_EQ(ok.row(0).terms.at(0).coef, 5);
  EXPECT_EQ(ok.row(0).upper, 5);
  struct Case {
    std::string program, says;
  };
  for (const Case& c : std::vector<Case>{
           {head + tail + "m.setObjective(x, GRB.MINIMIZE)\nm.addConstr(cup * x <= 3, name=\"c\")\n", "unknown data name 'cup'"},
           {head + tail + "m.setObjective(x, GRB.MINIMIZE)\nm.addConstr(x <= cup, name=\"c\")\n", "unknown data name 'cup'"},
           {head + "cap = 6\n" + tail + "m.setObjective(x, GRB.MINIMIZE)\n", "data cap defined twice"},
           {head + "x = 2\n" + tail + "m.setObjective(x, GRB.MINIMIZE)\n", "variable x is also a data name"},
           {head + "big = GRB.INFINITY\n" + tail + "m.setObjective(x, GRB.MINIMIZE)\n", "data big is not a finite number"},
       }) {
    try {
      read_gurobipy(c.program);
      ADD_FAILURE() << "accepted: " << c.says;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("<gurobipy>:"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trex::ordata
