// CSV records: quoted commas, doubled quotes and newlines, CRLF, blank lines, the line each
// record starts on, and a file cut off inside a quoted field.
#include <gtest/gtest.h>

#include "trex/util/csv.h"
#include "trex/util/error.h"

namespace trex {
namespace {

TEST(Csv, QuotedFieldsAndLines) {
  std::vector<CsvRecord> r = parse_csv("a,b\r\n\"x,1\",\"say \"\"hi\"\"\"\n\n\"two\nlines\",z\nlast,", "t.csv");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].fields, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r[1].fields, (std::vector<std::string>{"x,1", "say \"hi\""}));
  EXPECT_EQ(r[1].line, 2);
  EXPECT_EQ(r[2].fields[0], "two\nlines");
  EXPECT_EQ(r[2].line, 4);
  EXPECT_EQ(r[3].line, 6);
  EXPECT_EQ(r[3].fields, (std::vector<std::string>{"last", ""}));
}

TEST(Csv, UnterminatedQuoteNamesFileAndLine) {
  try {
    parse_csv("a,b\n1,\"cut", "t.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.csv");
    EXPECT_EQ(e.line(), 2);
  }
}

}  // namespace
}  // namespace trex
