// The recipe's copy documents (src/trex/recipe/copy_docs.h): every number an answer writes is the
// statement's number for that item and attribute (parsed back from each of the three statement
// styles), in-order documents repeat their list, the stream is fixed by (seed, index), and the
// file is written whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "nlohmann/json.hpp"
#include "util/temp_dir.h"
#include "trex/recipe/copy_docs.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::recipe {
namespace {

using nlohmann::json;
using Table = std::map<std::pair<std::string, std::string>, std::string>;  // (item key, attribute key) -> number

std::string key_of(std::string s) {
  for (char& c : s) {
    if (c == ' ') c = '_';
    c = char(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + sep.size();
  }
}

// The statement's item x attribute numbers, read back from whichever style wrote them.
Table parse_statement(const std::string& user, int& style) {
  Table t;
  const std::string body = split(split(user, "\n\n").at(1), "\n").at(0);  // before the scalar lines
  std::smatch m;
  if (std::regex_search(body, m, std::regex(R"(^Data per item \(Item: ([^)]*)\): (.*)\.$)"))) {
    style = 0;
    const std::vector<std::string> attrs = split(m[1].str(), "; ");
    for (const std::string& row : split(m[2].str(), "; ")) {
      const size_t sp = row.rfind(' ');
      const std::vector<std::string> values = split(row.substr(sp + 1), "/");
      EXPECT_EQ(values.size(), attrs.size()) << row;
      for (size_t k = 0; k < attrs.size() && k < values.size(); ++k) t[{key_of(row.substr(0, sp)), key_of(attrs[k])}] = values[k];
    }
  } else if (body.rfind("The ", 0) == 0) {
    style = 2;
    const std::regex fact(R"(The ([a-z ]+) of ([a-z ]+) is ([0-9.]+)\.)");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), fact); it != std::sregex_iterator(); ++it)
      t[{key_of((*it)[2].str()), key_of((*it)[1].str())}] = (*it)[3].str();
  } else {
    style = 1;
    const std::regex item(R"(([A-Za-z][a-z ]*): ([^.]*(?:\.[0-9]+[^.]*)*)\.(?: |$))");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), item); it != std::sregex_iterator(); ++it)
      for (const std::string& pair : split((*it)[2].str(), ", ")) {
        const size_t sp = pair.rfind(' ');
        t[{key_of((*it)[1].str()), key_of(pair.substr(0, sp))}] = pair.substr(sp + 1);
      }
  }
  return t;
}

// A keyed-in-order statement (written attribute by attribute) read back the same way: the table
// and "A: x 1, y 3." layouts turned round, the "The a of x is 1." facts in another order.
Table parse_attribute_major_statement(const std::string& user, int& style) {
  Table t;
  const std::string body = split(split(user, "\n\n").at(1), "\n").at(0);
  std::smatch m;
  if (std::regex_search(body, m, std::regex(R"(^Data per attribute \(Attribute: ([^)]*)\): (.*)\.$)"))) {
    style = 0;
    const std::vector<std::string> items = split(m[1].str(), "; ");
    for (const std::string& row : split(m[2].str(), "; ")) {
      const size_t sp = row.rfind(' ');
      const std::vector<std::string> values = split(row.substr(sp + 1), "/");
      EXPECT_EQ(values.size(), items.size()) << row;
      for (size_t n = 0; n < items.size() && n < values.size(); ++n) t[{key_of(items[n]), key_of(row.substr(0, sp))}] = values[n];
    }
    return t;
  }
  if (body.rfind("The ", 0) == 0) return parse_statement(user, style);
  style = 1;
  for (const auto& [key, v] : parse_statement(user, style)) t[{key.second, key.first}] = v;  // (attribute, item) read as (item, attribute)
  return t;
}

// The numbers of a text in the order they appear.
std::vector<std::string> numbers_in(const std::string& text) {
  std::vector<std::string> out;
  const std::regex number(R"([0-9]+(?:\.[0-9]+)?)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) out.push_back(it->str());
  return out;
}

TEST(CopyDocs, EveryAnswerNumberIsTheStatementsNumberForItsItemAndAttribute) {
  int styles[3] = {0, 0, 0}, in_order = 0, dicts = 0, constraints = 0;
  for (uint64_t i = 0; i < 600; ++i) {
    const json doc = copy_document(7, i);
    const std::string user = doc["messages"][0]["content"], answer = doc["messages"][1]["content"];
    ASSERT_EQ(doc["messages"][0]["role"], "user");
    ASSERT_EQ(doc["messages"][1]["role"], "assistant");
    if (user.rfind("Numbers: ", 0) == 0) {
      ++in_order;
      EXPECT_EQ(user, "Numbers: " + answer + "\nRepeat them.");
      EXPECT_EQ(split(answer, " ").size(), 12u) << answer;
      continue;
    }
    int style = -1;
    const Table t = parse_statement(user, style);
    ++styles[style];
    ASSERT_GE(t.size(), 4u) << user;
    std::set<std::string> scalars;
    const std::regex scalar(R"(\n\* There are ([0-9.]+) )");
    for (auto it = std::sregex_iterator(user.begin(), user.end(), scalar); it != std::sregex_iterator(); ++it)
      scalars.insert((*it)[1].str());
    size_t written = 0;
    for (const std::string& line : split(answer, "\n")) {
      std::smatch m;
      if (std::regex_match(line, m, std::regex(R"(([a-z_]+) = \{(.*)\})"))) {
        ++dicts;
        const std::regex entry(R"sq("([a-z_]+)": ([0-9.]+))sq");
        const std::string inner = m[2].str();
        for (auto it = std::sregex_iterator(inner.begin(), inner.end(), entry); it != std::sregex_iterator(); ++it, ++written)
          EXPECT_EQ(t.at({(*it)[1].str(), m[1].str()}), (*it)[2].str()) << line << "\n" << user;
      } else if (std::regex_match(line, m, std::regex(R"sq(m\.addConstr\((.*) <= ([0-9.]+), name="([a-z_]+)"\))sq"))) {
        ++constraints;
        EXPECT_TRUE(scalars.count(m[2].str())) << line;
        const std::regex term(R"sq(([0-9.]+) \* x\["([a-z_]+)"\])sq");
        const std::string lhs = m[1].str();
        for (auto it = std::sregex_iterator(lhs.begin(), lhs.end(), term); it != std::sregex_iterator(); ++it, ++written)
          EXPECT_EQ(t.at({(*it)[2].str(), m[3].str()}), (*it)[1].str()) << line << "\n" << user;
      } else if (std::regex_match(line, m, std::regex(R"(([a-z_]+) = ([0-9.]+))"))) {
        EXPECT_TRUE(scalars.count(m[2].str())) << line;
      } else {
        EXPECT_TRUE(line == "```python" || line == "```" || line.empty()) << line;
      }
    }
    EXPECT_EQ(written, t.size()) << "every item x attribute number is written once\n" << answer;
  }
  // Every kind of document occurs (about a third in order; the three styles evenly).
  EXPECT_GT(in_order, 120);
  for (int s : styles) EXPECT_GT(s, 80);
  EXPECT_GT(dicts, 200);
  EXPECT_GT(constraints, 100);
}

TEST(CopyDocs, StreamIsFixedBySeedAndIndex) {
  EXPECT_EQ(copy_document(3, 5), copy_document(3, 5));
  EXPECT_NE(copy_document(3, 5), copy_document(4, 5));
  EXPECT_NE(copy_document(3, 5), copy_document(3, 6));
  // The file's document i is copy_document(seed, i), so a larger count extends a smaller one.
  test_util::TempDir d("copy-docs");
  write_copy_documents(d.path + "/a.jsonl", 50, 9);
  std::istringstream lines(read_file(d.path + "/a.jsonl"));
  std::string line;
  uint64_t i = 0;
  for (; std::getline(lines, line); ++i) EXPECT_EQ(json::parse(line), copy_document(9, i));
  EXPECT_EQ(i, 50u);
  EXPECT_THROW(write_copy_documents(d.path + "/b.jsonl", 0, 9), InputError);
  EXPECT_FALSE(std::filesystem::exists(d.path + "/b.jsonl"));
}

// A style keeps one kind of document (a curriculum trains on in-order lists first, then keyed
// statements); document i of a style depends only on (seed, i) as in the mixed stream.
TEST(CopyDocs, AStyleKeepsOneKindOfDocument) {
  auto in_order = [](const json& doc) { return doc["messages"][0]["content"].get<std::string>().rfind("Numbers: ", 0) == 0; };
  int mixed_in_order = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    const json o = copy_document(5, i, CopyStyle::kInOrder), k = copy_document(5, i, CopyStyle::kKeyed);
    EXPECT_TRUE(in_order(o)) << o.dump();
    EXPECT_EQ(o["messages"][0]["content"], "Numbers: " + o["messages"][1]["content"].get<std::string>() + "\nRepeat them.");
    EXPECT_FALSE(in_order(k)) << k.dump();
    int style = -1;
    EXPECT_GE(parse_statement(k["messages"][0]["content"], style).size(), 4u) << k.dump();
    EXPECT_EQ(o, copy_document(5, i, CopyStyle::kInOrder));
    mixed_in_order += in_order(copy_document(5, i, CopyStyle::kMixed));
    EXPECT_EQ(copy_document(5, i), copy_document(5, i, CopyStyle::kMixed));
  }
  EXPECT_GT(mixed_in_order, 60);
  EXPECT_LT(mixed_in_order, 140);
  EXPECT_EQ(copy_style_named("in-order"), CopyStyle::kInOrder);
  EXPECT_EQ(copy_style_named("keyed"), CopyStyle::kKeyed);
  EXPECT_EQ(copy_style_named("mixed"), CopyStyle::kMixed);
  EXPECT_FALSE(copy_style_named("inorder").has_value());
  test_util::TempDir d("copy-docs-style");
  write_copy_documents(d.path + "/o.jsonl", 20, 5, CopyStyle::kInOrder);
  std::istringstream lines(read_file(d.path + "/o.jsonl"));
  std::string line;
  uint64_t i = 0;
  for (; std::getline(lines, line); ++i) EXPECT_EQ(json::parse(line), copy_document(5, i, CopyStyle::kInOrder));
  EXPECT_EQ(i, 20u);
}

// keyed-in-order (the curriculum's step from in-order lists to keyed documents): every number the
// answer writes is the statement's number for its item and attribute, and the answer's item x
// attribute numbers are the statement's numbers in the order the statement gives them.
TEST(CopyDocs, KeyedInOrderAnswersCopyTheStatementsNumbersInItsOrder) {
  int styles[3] = {0, 0, 0}, dicts = 0, constraints = 0;
  for (uint64_t i = 0; i < 600; ++i) {
    const json doc = copy_document(9, i, CopyStyle::kKeyedInOrder);
    EXPECT_EQ(doc, copy_document(9, i, CopyStyle::kKeyedInOrder));
    const std::string user = doc["messages"][0]["content"], answer = doc["messages"][1]["content"];
    int style = -1;
    const Table t = parse_attribute_major_statement(user, style);
    ++styles[style];
    ASSERT_GE(t.size(), 4u) << user;
    std::vector<std::string> copied;  // the answer's item x attribute numbers, in its order
    for (const std::string& line : split(answer, "\n")) {
      std::smatch m;
      if (std::regex_match(line, m, std::regex(R"(([a-z_]+) = \{(.*)\})"))) {
        ++dicts;
        const std::regex entry(R"sq("([a-z_]+)": ([0-9.]+))sq");
        const std::string inner = m[2].str();
        for (auto it = std::sregex_iterator(inner.begin(), inner.end(), entry); it != std::sregex_iterator(); ++it) {
          EXPECT_EQ(t.at({(*it)[1].str(), m[1].str()}), (*it)[2].str()) << line << "\n" << user;
          copied.push_back((*it)[2].str());
        }
      } else if (std::regex_match(line, m, std::regex(R"sq(m\.addConstr\((.*) <= ([0-9.]+), name="([a-z_]+)"\))sq"))) {
        ++constraints;
        const std::regex term(R"sq(([0-9.]+) \* x\["([a-z_]+)"\])sq");
        const std::string lhs = m[1].str();
        for (auto it = std::sregex_iterator(lhs.begin(), lhs.end(), term); it != std::sregex_iterator(); ++it) {
          EXPECT_EQ(t.at({(*it)[2].str(), m[3].str()}), (*it)[1].str()) << line << "\n" << user;
          copied.push_back((*it)[1].str());
        }
      } else {
        EXPECT_TRUE(std::regex_match(line, std::regex(R"(([a-z_]+) = ([0-9.]+))")) || line == "```python" || line == "```" ||
                    line.empty())
            << line;
      }
    }
    EXPECT_EQ(copied.size(), t.size()) << answer;
    const std::string body = split(split(user, "\n\n").at(1), "\n").at(0);
    EXPECT_EQ(copied, numbers_in(body)) << "the answer keeps the statement's order\n" << user << "\n" << answer;
  }
  for (int s : styles) EXPECT_GT(s, 150);
  EXPECT_GT(dicts, 200);
  EXPECT_GT(constraints, 100);
  EXPECT_EQ(copy_style_named("keyed-in-order"), CopyStyle::kKeyedInOrder);
}

// The generator's output is pinned to kCopyDocsVersion, which a copy_docs stage's cache key
// holds: a change to the documents fails here until the version (and this digest) is bumped, so
// a recipe never keeps the documents of an older generator.
TEST(CopyDocs, OutputIsPinnedToTheVersionInTheStageKey) {
  // Every style a recipe can name feeds a stage whose cache key carries kCopyDocsVersion, so each
  // style's stream is pinned, not only the default one.
  const std::pair<CopyStyle, uint64_t> pinned[] = {
      {CopyStyle::kMixed, 0x73b8a765aec298a1ull},
      {CopyStyle::kInOrder, 0xabb8ec24cab98bffull},
      {CopyStyle::kKeyed, 0x7e44fc9227a8143eull},
      {CopyStyle::kKeyedInOrder, 0x147550f05a6a637full},
  };
  EXPECT_STREQ(kCopyDocsVersion, "copy_docs 1");
  for (const auto& [style, digest] : pinned) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a 64 over documents 0..99 of seeds 1 and 12
    for (uint64_t seed : {1, 12})
      for (uint64_t i = 0; i < 100; ++i)
        for (unsigned char ch : copy_document(seed, i, style).dump()) {
          h ^= ch;
          h *= 1099511628211ull;
        }
    EXPECT_EQ(h, digest) << "style " << int(style) << ": copy_document's output changed (0x" << std::hex << h
                         << "): bump kCopyDocsVersion (copy_docs.h) and this test's version and digests together";
  }
}

}  // namespace
}  // namespace trex::recipe
