// A model sent to the solve helper comes back with every field's bits as they were: infinite
// bounds, -0.0, binaries, integers, semi-continuous variables, unnamed and ranged rows, terms in
// the order they were set, quadratic objective and rows, SOS sets; malformed bytes are refused.
#include "trex/oreval/model_wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/util/error.h"

namespace trex::oreval {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same_quad(const std::vector<lp::QuadTerm>& a, const std::vector<lp::QuadTerm>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].i, b[k].i);
    EXPECT_EQ(a[k].j, b[k].j);
    EXPECT_TRUE(same_bits(a[k].coef, b[k].coef)) << a[k].coef << " vs " << b[k].coef;
  }
}

void expect_identical(const lp::Model& a, const lp::Model& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.sense, b.sense);
  EXPECT_EQ(a.objective_name, b.objective_name);
  EXPECT_TRUE(same_bits(a.objective_constant, b.objective_constant));
  ASSERT_EQ(a.num_vars(), b.num_vars());
  for (int j = 0; j < a.num_vars(); ++j) {
    const auto &u = a.var(j), &v = b.var(j);
    EXPECT_EQ(u.name, v.name);
    EXPECT_TRUE(same_bits(u.lower, v.lower)) << u.name << " " << u.lower << " vs " << v.lower;
    EXPECT_TRUE(same_bits(u.upper, v.upper)) << u.name << " " << u.upper << " vs " << v.upper;
    EXPECT_TRUE(same_bits(u.cost, v.cost)) << u.name << " " << u.cost << " vs " << v.cost;
    EXPECT_EQ(u.type, v.type);
    EXPECT_EQ(u.semicontinuous, v.semicontinuous);
    EXPECT_EQ(a.find_var(u.name), b.find_var(v.name));
  }
  ASSERT_EQ(a.num_rows(), b.num_rows());
  for (int r = 0; r < a.num_rows(); ++r) {
    const auto &p = a.row(r), &q = b.row(r);
    EXPECT_EQ(p.name, q.name);
    EXPECT_TRUE(same_bits(p.lower, q.lower));
    EXPECT_TRUE(same_bits(p.upper, q.upper));
    ASSERT_EQ(p.terms.size(), q.terms.size());
    for (size_t k = 0; k < p.terms.size(); ++k) {
      EXPECT_EQ(p.terms[k].var, q.terms[k].var);
      EXPECT_TRUE(same_bits(p.terms[k].coef, q.terms[k].coef)) << p.terms[k].coef << " vs " << q.terms[k].coef;
    }
    expect_same_quad(p.quad, q.quad);
  }
  expect_same_quad(a.objective_quad, b.objective_quad);
  ASSERT_EQ(a.sos.size(), b.sos.size());
  for (size_t k = 0; k < a.sos.size(); ++k) {
    EXPECT_EQ(a.sos[k].name, b.sos[k].name);
    EXPECT_EQ(a.sos[k].type, b.sos[k].type);
    EXPECT_EQ(a.sos[k].priority, b.sos[k].priority);
    EXPECT_EQ(a.sos[k].vars, b.sos[k].vars);
    ASSERT_EQ(a.sos[k].weights.size(), b.sos[k].weights.size());
    for (size_t w = 0; w < a.sos[k].weights.size(); ++w)
      EXPECT_TRUE(same_bits(a.sos[k].weights[w], b.sos[k].weights[w]));
  }
}

lp::Model round_trip(const lp::Model& m) { return model_from_wire(model_to_wire(m), "the model"); }

TEST(ModelWire, EveryFieldComesBackBitForBit) {
  lp::Model m;
  m.name = "plant \"a\"\n";
  m.sense = lp::Sense::kMaximize;
  m.objective_name = "profit";
  m.objective_constant = -0.0;
  int x = m.add_var("x", -lp::kInf, lp::kInf, lp::VarType::kContinuous, 0.1);
  int y = m.add_var("y", -0.0, 1e100, lp::VarType::kInteger, -1.0 / 3.0);
  int z = m.add_var("z", 0, 1, lp::VarType::kBinary, std::numeric_limits<double>::denorm_min());
  int s = m.add_var("s", 2.5, 10, lp::VarType::kContinuous, 1e-300);
  m.var(s).semicontinuous = true;
  int u = m.add_var("\xc3\xa9t\xc3\xa9", 0, 7, lp::VarType::kInteger, std::numeric_limits<double>::max());
  m.add_row("le", {{x, 1}, {y, 2}}, -lp::kInf, 4.000000000000001);
  m.add_row("", {{z, -0.0}, {u, 3}}, 1, lp::kInf);
  m.add_row("", {{x, 1}}, -2, 2);
  m.add_row("q", {{x, 1}}, -lp::kInf, 9, {{x, x, 1}, {x, y, -0.5}});
  m.row(2).terms = {{u, 1}, {x, 2}};  // by hand, unsorted: kept in this order
  m.add_objective_quad(y, x, 0.7);
  m.add_objective_quad(z, z, -2);
  lp::SosSet set;
  set.name = "s1";
  set.type = 2;
  set.priority = 3;
  set.vars = {x, y, z};
  set.weights = {1, 2.5, 1e9};
  m.sos.push_back(set);
  lp::Model back = round_trip(m);
  expect_identical(m, back);
  EXPECT_TRUE(std::signbit(back.objective_constant));
  EXPECT_TRUE(std::signbit(back.var(y).lower));
}

TEST(ModelWire, RandomDoublesComeBackBitForBit) {
  std::mt19937_64 rng(19);
  lp::Model m;
  for (int k = 0; k < 2000; ++k) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) d = double(int64_t(bits)) * 1e-7;
    m.add_var("v" + std::to_string(k), -lp::kInf, lp::kInf, lp::VarType::kContinuous, d);
  }
  expect_identical(m, round_trip(m));
}

// The LP reader takes any byte >= 0x80 in a name: such names come back byte for byte, and two
// that differ only in bytes that are not UTF-8 stay two (JSON would have made both "x\uFFFD").
TEST(ModelWire, NamesThatAreNotUtf8ComeBackByteForByte) {
  lp::Model m;
  m.name = "model\xc3";
  m.objective_name = "obj\x80";
  int a = m.add_var("x\xff", 0, 1, lp::VarType::kBinary, 1);
  int b = m.add_var("x\xfe", 0, 1, lp::VarType::kBinary, 2);
  m.add_var("\xed\xa0\x80", 0, 1, lp::VarType::kContinuous, 3);  // a UTF-16 surrogate, invalid in UTF-8
  m.add_row("r\xc0\xaf", {{a, 1}, {b, 1}}, -lp::kInf, 1);
  m.add_row("r\xc0\xae", {{a, 1}}, 0, lp::kInf);
  m.sos.push_back({"s\x81", 1, 0, {a, b}, {1, 2}});
  lp::Model back = round_trip(m);
  expect_identical(m, back);
  EXPECT_EQ(back.var(1).name, "x\xfe");
  EXPECT_EQ(back.find_var("x\xff"), a);
  EXPECT_EQ(back.find_var("x\xfe"), b);
  EXPECT_EQ(back.row(0).name, "r\xc0\xaf");
}

TEST(ModelWire, MalformedBytesAreRefusedNamingTheFile) {
  std::vector<std::string> bad = {"", "\xff", "{", "\x82\x01"};  // empty, a break alone, raw JSON, a cut array
  // Well-formed CBOR of the wrong shape.
  for (const char* doc : {"[]", R"({"name": "", "sense": "up"})",
                          R"({"name": "", "sense": "min", "objective_name": "obj", "constant": 0, "vars": [],
                              "rows": [["r", 0, 1, [[3, 1]], []]], "qobj": [], "sos": []})",
                          R"({"name": "", "sense": "min", "objective_name": "obj", "constant": "big", "vars": [],
                              "rows": [], "qobj": [], "sos": []})"}) {
    std::string bytes;
    nlohmann::json::to_cbor(nlohmann::json::parse(doc), bytes);
    bad.push_back(bytes);
  }
  for (const std::string& b : bad) {
    try {
      model_from_wire(b, "the model");
      ADD_FAILURE() << "accepted " << b.size() << " bytes";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "the model") << e.what();
    }
  }
}

}  // namespace
}  // namespace trex::oreval
