// The streaming JSON writer against a JSON parser: every byte that needs escaping, at every
// position relative to the 16-byte blocks of the fast path, and numbers that read back exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "nlohmann/json.hpp"
#include "trex/ordata/json_writer.h"

namespace trex::ordata {
namespace {

TEST(JsonWriter, EscapesEveryAwkwardByteAtEveryOffset) {
  for (int c = 1; c < 0x80; ++c)
    for (size_t pos = 0; pos < 40; pos += 3) {
      std::string s(40, 'a');
      s[pos] = char(c);
      s += "tail \"q\" \\ \n\t\r";
      std::string out;
      JsonWriter::escape(out, s);
      ASSERT_EQ(nlohmann::json::parse(out).get<std::string>(), s) << "byte " << c << " at " << pos;
    }
}

TEST(JsonWriter, ObjectsArraysAndNumbersReadBack) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a").value(0.1).key("b").value(3.0).key("c").value(-0.0).key("big").value(uint64_t(18446744073709551615ULL));
  w.key("inf").value(std::numeric_limits<double>::infinity()).key("list").begin_array().value(1).value("x").null();
  w.begin_object().key("k").value(true).end_object().end_array();
  w.key("empty").begin_object().end_object();
  w.end_object();
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["a"].get<double>(), 0.1);
  EXPECT_EQ(j["b"].get<double>(), 3.0);
  EXPECT_TRUE(j["b"].is_number_float());
  EXPECT_EQ(out.find("-0"), std::string::npos);
  EXPECT_EQ(j["big"].get<uint64_t>(), 18446744073709551615ULL);
  EXPECT_TRUE(j["inf"].is_null());
  EXPECT_EQ(j["list"].size(), 4u);
  EXPECT_TRUE(j["list"][3]["k"].get<bool>());
  EXPECT_TRUE(j["empty"].empty());
}

}  // namespace
}  // namespace trex::ordata
