// A failed fsync of a temporary (util/atomic_file.cc sync_temporary) still closes it, removes
// it and publishes nothing. An fsync cannot be made to fail on a real file system from a test,
// so this program defines fsync itself: the executable's definition is the one every call in
// it binds to (before the C library's). Unless a test asks for failures it is the system call.
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "trex/util/atomic_file.h"
#include "trex/util/atomic_files.h"
#include "trex/util/io_error.h"
#include "util/temp_dir.h"

namespace {
std::atomic<int> g_fsyncs_to_pass{-1};  // -1: never fail; else this many succeed, then each fails
std::atomic<int> g_fsyncs_failed{0};
}  // namespace

extern "C" int fsync(int fd) {
  int pass = g_fsyncs_to_pass.load();
  if (pass == 0) {
    ++g_fsyncs_failed;
    errno = EIO;
    return -1;
  }
  if (pass > 0) g_fsyncs_to_pass = pass - 1;
  return int(::syscall(SYS_fsync, fd));
}

namespace trex {
namespace {

struct FailingFsync {
  explicit FailingFsync(int pass) {
    g_fsyncs_failed = 0;
    g_fsyncs_to_pass = pass;
  }
  ~FailingFsync() { g_fsyncs_to_pass = -1; }
};

int open_descriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

int entries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFileFsyncFailure, OneFileIsClosedRemovedAndNotPublished) {
  test_util::TempDir tmp("fsync_one");  // removed however the test ends (FAIL() returns early)
  const std::string& dir = tmp.path;
  write_file_atomic(dir + "/out", "old");
  int before = open_descriptors();
  {
    FailingFsync failing(0);
    try {
      write_file_atomic(dir + "/out", "new");
      FAIL() << "expected an IoError";
    } catch (const IoError& e) {
      EXPECT_EQ(std::string(e.what()), dir + "/out: write failed: " + std::strerror(EIO));
    }
    EXPECT_EQ(g_fsyncs_failed.load(), 1);
  }
  EXPECT_EQ(open_descriptors(), before);  // the temporary's descriptor was closed
  EXPECT_EQ(read_file(dir + "/out"), "old");
  EXPECT_EQ(entries(dir), 1);  // no temporary left
}

TEST(AtomicFileFsyncFailure, SeveralFilesAreAllClosedRemovedAndNoneIsPublished) {
  test_util::TempDir tmp("fsync_several");  // removed however the test ends (FAIL() returns early)
  const std::string& dir = tmp.path;
  write_file_atomic(dir + "/a", "old a");
  int before = open_descriptors();
  {
    FailingFsync failing(1);  // a's succeeds, b's fails; c's is never reached
    try {
      write_files_atomic({{dir + "/a", "new a"}, {dir + "/b", "b"}, {dir + "/c", "c"}});
      FAIL() << "expected an IoError";
    } catch (const IoError& e) {
      EXPECT_EQ(std::string(e.what()), dir + "/b: write failed: " + std::strerror(EIO));
    }
    EXPECT_EQ(g_fsyncs_failed.load(), 1);
  }
  EXPECT_EQ(open_descriptors(), before);  // b's closed by sync_temporary, c's by the clean-up
  EXPECT_EQ(read_file(dir + "/a"), "old a");
  EXPECT_EQ(entries(dir), 1);  // a; no temporary of a, b or c
}

}  // namespace
}  // namespace trex
