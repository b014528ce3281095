#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex {
namespace {

std::string temp_dir() {
  std::string dir = std::filesystem::temp_directory_path() / ("trex_util_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(AtomicFile, WritesWholeFileAndLeavesNoTemporary) {
  std::string dir = temp_dir();
  std::string path = dir + "/out.txt";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second version");
  EXPECT_EQ(read_file(path), "second version");
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1);
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, FailureKeepsTheOldFileAndNamesThePath) {
  std::string dir = temp_dir();
  std::string path = dir + "/missing_subdir/out.txt";
  try {
    write_file_atomic(path, "x");
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {  // the system's refusal, not bad input: the command line exits 1
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot create: ", 0), 0u) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, ReadErrorsNameThePath) {
  EXPECT_THROW(read_file("/nonexistent/file.lp"), InputError);
  try {
    read_file("/");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos);
  }
  std::string dir = temp_dir();
  write_file_atomic(dir + "/big", std::string(1000, 'x'));
  EXPECT_THROW(read_file(dir + "/big", 100), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trex
