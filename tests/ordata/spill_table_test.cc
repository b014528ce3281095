// The file-backed dedup indexes: every value comes back under its key, oldest first, across
// the table's growth, through a page cache far smaller than the files; records read back by
// number.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "trex/ordata/page_cache.h"
#include "trex/ordata/spill_table.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::ordata {
namespace {

std::string scratch(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

TEST(SpillTable, ValuesSurviveGrowthInInsertionOrder) {
  PageCache cache(0);  // the smallest cache: 64 pages, while the table grows to 64 pages and more
  SpillTable t(cache, scratch("trex_spill_test_table"), 16);
  // 3000 keys, three values each, inserted interleaved so runs of one key are spread out.
  for (uint32_t round = 0; round < 3; ++round)
    for (uint64_t k = 0; k < 3000; ++k) t.insert(k * 0x9e3779b97f4a7c15ULL, uint32_t(k * 10 + round));
  EXPECT_EQ(t.size(), 9000u);
  EXPECT_GE(t.bytes(), 9000u * 2 * 16);  // load factor at most one half
  for (uint64_t k = 0; k < 3000; ++k) {
    std::vector<uint32_t> got;
    t.find(k * 0x9e3779b97f4a7c15ULL, [&](uint32_t v) { return got.push_back(v), false; });
    ASSERT_EQ(got, (std::vector<uint32_t>{uint32_t(k * 10), uint32_t(k * 10 + 1), uint32_t(k * 10 + 2)})) << k;
  }
  bool any = t.find(12345, [](uint32_t) { return true; });
  EXPECT_FALSE(any);
  // Key 0 is stored too (the empty marker is remapped).
  t.insert(0, 7);
  uint32_t seen = 0;
  EXPECT_TRUE(t.find(0, [&](uint32_t v) { return seen = v, v == 7; }));
  EXPECT_EQ(seen, 7u);
  EXPECT_LE(cache.resident_bytes(), cache.capacity_bytes());
}

TEST(CompactSpillTable, HalfTheBytesAndValuesSurviveGrowthInInsertionOrder) {
  // The band table's form: 8-byte slots keeping the key's high 32 bits.
  PageCache cache(0);
  CompactSpillTable t(cache, scratch("trex_spill_test_compact"), 16);
  SpillTable wide(cache, scratch("trex_spill_test_wide"), 16);
  for (uint32_t round = 0; round < 3; ++round)
    for (uint64_t k = 0; k < 3000; ++k) {
      t.insert(k * 0x9e3779b97f4a7c15ULL, uint32_t(k * 10 + round));
      wide.insert(k * 0x9e3779b97f4a7c15ULL, uint32_t(k * 10 + round));
    }
  EXPECT_EQ(t.size(), 9000u);
  EXPECT_EQ(t.bytes() * 2, wide.bytes());
  for (uint64_t k = 0; k < 3000; ++k) {
    std::vector<uint32_t> got;
    t.find(k * 0x9e3779b97f4a7c15ULL, [&](uint32_t v) { return got.push_back(v), false; });
    ASSERT_EQ(got, (std::vector<uint32_t>{uint32_t(k * 10), uint32_t(k * 10 + 1), uint32_t(k * 10 + 2)})) << k;
  }
  EXPECT_FALSE(t.find(uint64_t(12345) << 32, [](uint32_t) { return true; }));
  t.insert(0, 7);  // a key whose high half is 0 is stored too
  uint32_t seen = 0;
  EXPECT_TRUE(t.find(0, [&](uint32_t v) { return seen = v, v == 7; }));
  EXPECT_EQ(seen, 7u);
}

TEST(SpillTable, ManyGrowsThroughASmallCacheLoseNothingAndHoldOnlyTheBudget) {
  // 100,000 keys: the table grows to 2^18 slots (4 MB) through a 256 KB cache, so every
  // grow reads the old table back from its file and evicts the new one's pages as it goes.
  PageCache cache(0);
  SpillTable t(cache, scratch("trex_spill_test_big"), 16);
  for (uint64_t k = 1; k <= 100000; ++k) t.insert(k * 0xc2b2ae3d27d4eb4fULL, uint32_t(k));
  EXPECT_EQ(t.size(), 100000u);
  EXPECT_GE(t.bytes(), uint64_t(1) << 22);
  EXPECT_EQ(cache.capacity_bytes(), PageCache::kMinBytes);
  EXPECT_LE(cache.resident_bytes(), cache.capacity_bytes());
  for (uint64_t k = 1; k <= 100000; k += 7) {
    uint32_t got = 0;
    ASSERT_TRUE(t.find(k * 0xc2b2ae3d27d4eb4fULL, [&](uint32_t v) { return got = v, true; })) << k;
    ASSERT_EQ(got, uint32_t(k));
  }
}

TEST(SpillRecords, ReadBackByNumberThroughASmallCache) {
  PageCache cache(0);
  SpillRecords r(cache, scratch("trex_spill_test_records"), 64);  // 20,000 x 64 B = 1.3 MB of file
  char rec[64] = {};
  for (uint32_t i = 0; i < 20000; ++i) {
    std::snprintf(rec, sizeof rec, "record %u", i);
    ASSERT_EQ(r.append(rec), i);
  }
  EXPECT_EQ(r.size(), 20000u);
  for (uint32_t i = 0; i < 20000; i += 997) {
    std::snprintf(rec, sizeof rec, "record %u", i);
    char got[64];
    r.read(i, got);
    EXPECT_STREQ(got, rec);
  }
  EXPECT_THROW(SpillRecords(cache, scratch("trex_spill_test_odd"), 40), std::logic_error);  // 40 does not divide 4096
}

// The system's refusal (util/io_error.h: the command line exits 1), not bad input (exit 2).
TEST(SpillTable, UnwritableDirectoryIsAnIoErrorNamingTheFile) {
  PageCache cache(0);
  try {
    SpillTable t(cache, "/nonexistent-dir/trex_spill", 16);
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent-dir/trex_spill: cannot create a dedup index file: ", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace trex::ordata
