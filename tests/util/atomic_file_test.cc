#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "trex/util/atomic_file.h"
#include "trex/util/atomic_files.h"
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

int regular_files(const std::string& dir) {
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.is_regular_file();
  return entries;
}

TEST(AtomicFile, SeveralFilesArePublishedWholeWithNoTemporary) {
  std::string dir = temp_dir();
  write_file_atomic(dir + "/b", "old b");
  write_files_atomic({{dir + "/a", "first file"}, {dir + "/b", std::string(100000, 'b')}, {dir + "/c", ""}});
  EXPECT_EQ(read_file(dir + "/a"), "first file");
  EXPECT_EQ(read_file(dir + "/b"), std::string(100000, 'b'));
  EXPECT_EQ(read_file(dir + "/c"), "");
  EXPECT_EQ(regular_files(dir), 3);
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, SeveralFilesOneRefusedPublishesNoneAndLeavesNoTemporary) {
  std::string dir = temp_dir();
  write_file_atomic(dir + "/a", "old a");
  std::string refused = dir + "/missing_subdir/b";
  try {
    write_files_atomic({{dir + "/a", "new a"}, {refused, "b"}, {dir + "/c", "c"}});
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(refused + ": cannot create: ", 0), 0u) << e.what();
  }
  EXPECT_EQ(read_file(dir + "/a"), "old a");  // written before the refusal, but not published
  EXPECT_EQ(regular_files(dir), 1);
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, SeveralFilesARefusedRenameKeepsTheEarlierAndRemovesTheLaterTemporaries) {
  std::string dir = temp_dir();
  std::filesystem::create_directories(dir + "/b");  // a non-empty folder: the rename over it fails
  write_file_atomic(dir + "/b/keep", "x");
  try {
    write_files_atomic({{dir + "/a", "new a"}, {dir + "/b", "b"}, {dir + "/c", "c"}});
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir + "/b: cannot rename into place: ", 0), 0u) << e.what();
  }
  EXPECT_EQ(read_file(dir + "/a"), "new a");
  EXPECT_FALSE(std::filesystem::exists(dir + "/c"));
  EXPECT_EQ(regular_files(dir), 1);  // a; no temporary of b or c
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
