// The dedup indexes' page cache: it holds at most its budget, writes back what it evicts,
// reads zeros past the end of a file, forgets a dropped file, and names the file it fails on.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "trex/ordata/page_cache.h"
#include "trex/util/error.h"

namespace trex::ordata {
namespace {

std::string scratch(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

TEST(PageCache, EvictedPagesAreWrittenBackAndDroppedFilesForgotten) {
  const std::string path = scratch("trex_page_cache_test");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ::unlink(path.c_str());
  PageCache cache(0);
  const uint32_t file = cache.add_file(fd, path);
  const uint64_t pages = 4 * cache.capacity_bytes() / PageCache::kPageBytes;  // four times the cache
  for (uint64_t p = 0; p < pages; ++p) {
    unsigned char* d = cache.page(file, p, false);
    EXPECT_EQ(d[0], 0) << p;  // past the end of the file: zeros
    std::memcpy(cache.page(file, p, true), &p, sizeof p);
  }
  EXPECT_EQ(cache.resident_bytes(), cache.capacity_bytes());
  for (uint64_t p = 0; p < pages; ++p) {
    uint64_t got = 0;
    std::memcpy(&got, cache.page(file, p, false), sizeof got);
    ASSERT_EQ(got, p);
  }
  // Dropped with write-back: the file holds every page; without: the change is gone.
  cache.drop_file(file, true);
  EXPECT_EQ(cache.resident_bytes(), 0u);
  uint64_t on_disk = 0;
  ASSERT_EQ(::pread(fd, &on_disk, sizeof on_disk, off_t((pages - 1) * PageCache::kPageBytes)), ssize_t(sizeof on_disk));
  EXPECT_EQ(on_disk, pages - 1);
  const uint32_t again = cache.add_file(fd, path);
  cache.page(again, 0, true)[0] = 0xff;
  cache.drop_file(again, false);
  unsigned char first = 0;
  ASSERT_EQ(::pread(fd, &first, 1, 0), 1);
  EXPECT_EQ(first, 0);  // page 0 held the number 0
  ::close(fd);
}

TEST(PageCache, AFailedReadIsAnInputErrorNamingTheFile) {
  PageCache cache(0);
  const uint32_t file = cache.add_file(-1, "/scratch/a-closed-index");
  try {
    cache.page(file, 0, false);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/scratch/a-closed-index"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cache.resident_bytes(), 0u);
}

}  // namespace
}  // namespace trex::ordata
