// The run-level line for items that trex itself could not score (report.h unscored_items_note):
// said once on stderr, since the run exits 0 and each reason is otherwise only in results.jsonl.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trex/oreval/report.h"

namespace trex::oreval {
namespace {

ItemResult item(const std::string& id, const std::string& status, const std::string& message) {
  ItemResult r;
  r.id = id;
  r.status = status;
  r.message = message;
  return r;
}

TEST(UnscoredItemsNote, NothingWhenEveryItemWasScored) {
  std::vector<std::vector<ItemResult>> results = {
      {item("a", "optimal", ""), item("b", "syntax-error", "line 1")}, {item("c", "equivalent", "")}};
  EXPECT_EQ(unscored_items_note(results), "");
  EXPECT_EQ(unscored_items_note({}), "");
}

TEST(UnscoredItemsNote, CountsOverEveryBenchmarkAndGivesTheReason) {
  const std::string why = "warm interpreter: cannot attach its workspace: move_mount: refused";
  std::vector<std::vector<ItemResult>> results = {{item("a", "error", why), item("b", "error", why)},
                                                  {item("c", "error", why)}};
  EXPECT_EQ(unscored_items_note(results),
            "trex eval: 3 of 3 items could not be scored (status \"error\" in results.jsonl): " + why + "\n");
}

// Several reasons: the most common is given, with its count and how many others there were; a
// reason over several lines stays one line.
TEST(UnscoredItemsNote, TheMostCommonReasonOnOneLine) {
  std::vector<std::vector<ItemResult>> results = {{item("a", "error", "fork failed"), item("b", "error", "two\nlines"),
                                                   item("c", "error", "two\nlines"), item("d", "optimal", ""),
                                                   item("e", "error", "")}};
  EXPECT_EQ(unscored_items_note(results),
            "trex eval: 4 of 5 items could not be scored (status \"error\" in results.jsonl): two lines (2 of them; 2 "
            "other reasons)\n");
  // Ties go to the reason met first.
  results = {{item("a", "error", "first"), item("b", "error", "second")}};
  EXPECT_EQ(unscored_items_note(results),
            "trex eval: 2 of 2 items could not be scored (status \"error\" in results.jsonl): first (1 of them; 1 other "
            "reason)\n");
}

}  // namespace
}  // namespace trex::oreval
