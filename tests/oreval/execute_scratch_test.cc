// Where each program's folder goes: a private $XDG_RUNTIME_DIR on a tmpfs, else a per-run folder
// under a sticky world-writable tmpfs (/dev/shm), else the system's temporary folder; a choice
// that cannot be used is an error naming it, never a silent step to the next place.
#include "trex/oreval/execute_scratch.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

bool is_tmpfs(const std::string& p) {
  struct statfs s;
  return statfs(p.c_str(), &s) == 0 && s.f_type == TMPFS_MAGIC;
}

// A folder made for one test and removed with everything in it.
struct Folder {
  std::string path;
  Folder(const std::string& under, mode_t mode) {
    path = under + "/trex-scratch-test-XXXXXX";
    if (!mkdtemp(path.data())) throw std::runtime_error("mkdtemp under " + under);
    chmod(path.c_str(), mode);
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

mode_t mode_of(const std::string& p) {
  struct stat st;
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

class ExecuteScratch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "no tmpfs at /dev/shm on this machine";
  }
  std::string tmp = fs::temp_directory_path().string();
};

TEST_F(ExecuteScratch, APrivateRuntimeDirOnATmpfsIsUsedAsItIs) {
  Folder xdg("/dev/shm", 0700);
  ScratchPlaces places{"", xdg.path, "/dev/shm", tmp, false};
  auto root = choose_scratch_root(places);
  EXPECT_EQ(root->path(), xdg.path);
  EXPECT_FALSE(root->made());
  std::string program = make_program_folder(root->path());
  EXPECT_EQ(program.rfind(xdg.path + "/trex-eval-", 0), 0u) << program;
  EXPECT_EQ(mode_of(program), 0700u);
  root.reset();
  EXPECT_TRUE(fs::exists(xdg.path));  // not this run's to remove
  EXPECT_EQ(rmdir(program.c_str()), 0);
}

TEST_F(ExecuteScratch, ARuntimeDirThatIsNotPrivateIsReported) {
  Folder open_one("/dev/shm", 0755);
  try {
    choose_scratch_root({"", open_one.path, "/dev/shm", tmp, false});
    FAIL() << "an open XDG_RUNTIME_DIR was used";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("XDG_RUNTIME_DIR=" + open_one.path + ": open to group or others (mode 755)"),
              std::string::npos) << e.what();
  }
  Folder holder("/dev/shm", 0700);
  std::string file = holder.path + "/file";
  std::ofstream(file) << "x";
  EXPECT_THROW(choose_scratch_root({"", file, "/dev/shm", tmp, false}), std::runtime_error);
  EXPECT_THROW(choose_scratch_root({"", holder.path + "/absent", "/dev/shm", tmp, false}), std::runtime_error);
  if (geteuid() == 0) {
    Folder others("/dev/shm", 0700);
    ASSERT_EQ(chown(others.path.c_str(), 65534, 65534), 0);
    try {
      choose_scratch_root({"", others.path, "/dev/shm", tmp, false});
      FAIL() << "another user's XDG_RUNTIME_DIR was used";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("owned by uid 65534"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ExecuteScratch, ARuntimeDirOnDiskOrForAnotherUserGivesWayToShm) {
  Folder on_disk(tmp, 0700);
  if (is_tmpfs(tmp)) GTEST_SKIP() << tmp << " is a tmpfs here";
  auto root = choose_scratch_root({"", on_disk.path, "/dev/shm", tmp, false});
  EXPECT_TRUE(root->made());
  EXPECT_EQ(root->path().rfind("/dev/shm/trex-run-", 0), 0u) << root->path();
  Folder xdg("/dev/shm", 0700);
  auto for_nobody = choose_scratch_root({"", xdg.path, "/dev/shm", tmp, true});
  EXPECT_NE(for_nobody->path(), xdg.path);
  EXPECT_TRUE(for_nobody->made());
}

TEST_F(ExecuteScratch, ThePerRunShmFolderIsPrivateAndRemovedWithTheRun) {
  Folder shm("/dev/shm", 01777);
  auto mine = choose_scratch_root({"", "", shm.path, tmp, false});
  ASSERT_TRUE(mine->made());
  std::string path = mine->path();
  EXPECT_EQ(path.rfind(shm.path + "/trex-run-", 0), 0u) << path;
  EXPECT_EQ(mode_of(path), 0700u);
  // For the sandbox's other user: it passes through by name, but cannot list the folder.
  auto theirs = choose_scratch_root({"", "", shm.path, tmp, true});
  EXPECT_EQ(mode_of(theirs->path()), 0711u);
  std::string program = make_program_folder(path);
  EXPECT_EQ(mode_of(program), 0700u);
  EXPECT_EQ(rmdir(program.c_str()), 0);
  mine.reset();
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(ExecuteScratch, WithoutAUsableTmpfsTheSystemFolderIsUsed) {
  Folder on_disk(tmp, 01777);
  if (is_tmpfs(tmp)) GTEST_SKIP() << tmp << " is a tmpfs here";
  auto root = choose_scratch_root({"", "", on_disk.path, tmp, false});  // sticky, but not a tmpfs
  EXPECT_EQ(root->path(), tmp);
  EXPECT_FALSE(root->made());
  Folder not_shared("/dev/shm", 0700);  // a tmpfs folder, but not world-writable and sticky
  EXPECT_EQ(choose_scratch_root({"", "", not_shared.path, tmp, false})->path(), tmp);
  EXPECT_EQ(choose_scratch_root({"", "", "/nonexistent-shm", tmp, false})->path(), tmp);
}

TEST_F(ExecuteScratch, AProgramFolderThatCannotBeMadeIsReported) {
  std::string gone;
  {
    Folder shm("/dev/shm", 0700);
    gone = shm.path;
  }
  try {
    make_program_folder(gone);
    FAIL() << "a folder was made under a removed root";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot make a temporary folder in " + gone + ": No such file or directory"),
              std::string::npos) << e.what();
  }
  // And the per-run folder: a file where the shared tmpfs folder should be is no folder.
  Folder holder("/dev/shm", 0700);
  std::ofstream(holder.path + "/shm") << "x";
  EXPECT_EQ(choose_scratch_root({"", "", holder.path + "/shm", tmp, false})->path(), tmp);
}

TEST_F(ExecuteScratch, ASetTmpdirIsUsedAsItIsBeforeAnyTmpfs) {
  Folder xdg("/dev/shm", 0700);
  Folder chosen(tmp, 0700);
  auto root = choose_scratch_root({chosen.path, xdg.path, "/dev/shm", tmp, false});
  EXPECT_EQ(root->path(), chosen.path);
  EXPECT_FALSE(root->made());
}

TEST_F(ExecuteScratch, ThisProcessUsesOneRootForEveryProgram) {
  const std::string& a = scratch_root();
  EXPECT_EQ(&a, &scratch_root());
  std::string one = make_program_folder(a), two = make_program_folder(a);
  EXPECT_NE(one, two);
  EXPECT_EQ(fs::path(one).parent_path(), fs::path(a));
  rmdir(one.c_str());
  rmdir(two.c_str());
}

}  // namespace
}  // namespace trex::oreval
