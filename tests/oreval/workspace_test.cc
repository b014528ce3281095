// The warm interpreters' workspace tmpfs (workspace.h): bounded, nosuid/nodev/noexec, made and
// attached only with the privilege to (else refused, and the evaluator keeps its folders under
// $TMPDIR), attached in a namespace of its own without reaching the host's, and emptied by
// descriptor whatever a program leaves in it.
#include "trex/oreval/workspace.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

constexpr long kTmpfsMagic = 0x01021994;

#define REQUIRE_ROOT() \
  if (geteuid() != 0) GTEST_SKIP() << "only root makes a workspace (elsewhere the folders stay under $TMPDIR)"

// Runs `body` in a forked child; its exit status (the child's checks return a step number).
template <typename F>
int in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

// Writes `bytes` into `name` of `dir`; the errno of the first failure, 0 when all went.
int write_bytes(int dir, const char* name, size_t bytes) {
  int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  std::vector<char> block(size_t(64) << 10, 'x');
  for (size_t done = 0; done < bytes;) {
    ssize_t w = write(fd, block.data(), std::min(block.size(), bytes - done));
    if (w <= 0) {
      int e = w < 0 ? errno : ENOSPC;
      close(fd);
      return e;
    }
    done += size_t(w);
  }
  close(fd);
  return 0;
}

std::string fresh_folder() {
  std::string t = (fs::temp_directory_path() / "trex-workspace-test-XXXXXX").string();
  if (!mkdtemp(t.data())) return "";
  return t;
}

TEST(Workspace, IsABoundedTmpfsMountedNosuidNodevNoexec) {
  REQUIRE_ROOT();
  int mnt = make_workspace(size_t(1) << 20, 16);
  ASSERT_GE(mnt, 0) << strerror(errno);
  struct statfs sf;
  ASSERT_EQ(fstatfs(mnt, &sf), 0);
  EXPECT_EQ(long(sf.f_type), kTmpfsMagic);
  struct statvfs sv;
  ASSERT_EQ(fstatvfs(mnt, &sv), 0);
  EXPECT_TRUE(sv.f_flag & ST_NOSUID);
  EXPECT_TRUE(sv.f_flag & ST_NODEV);
  EXPECT_TRUE(sv.f_flag & ST_NOEXEC);
  struct stat st;
  ASSERT_EQ(fstat(mnt, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  EXPECT_EQ(st.st_uid, 0u);
  // The bytes: a file twice the size cannot be written whole.
  EXPECT_EQ(write_bytes(mnt, "big", size_t(2) << 20), ENOSPC);
  ASSERT_EQ(unlinkat(mnt, "big", 0), 0);
  // The inodes: no more than 16 in all (the root counts as one).
  int made = 0, last = 0;
  for (int i = 0; i < 32 && last == 0; ++i) {
    last = write_bytes(mnt, ("f" + std::to_string(i)).c_str(), 1);
    if (last == 0) ++made;
  }
  EXPECT_EQ(last, ENOSPC);
  EXPECT_LT(made, 16);
  close(mnt);
}

// Without CAP_SYS_ADMIN (user nobody) neither step is allowed: the evaluator then gives its
// programs folders under $TMPDIR, and the interpreter reports that it attached nothing.
TEST(Workspace, IsRefusedWithoutThePrivilege) {
  REQUIRE_ROOT();
  int mnt = make_workspace(size_t(1) << 20, 16);
  ASSERT_GE(mnt, 0) << strerror(errno);
  std::string at = fresh_folder();
  ASSERT_FALSE(at.empty());
  int status = in_child([&] {
    if (setgid(65534) != 0 || setuid(65534) != 0) return 1;
    errno = 0;
    if (make_workspace(size_t(1) << 20, 16) >= 0 || errno != EPERM) return 2;
    const char* what = "";
    if (attach_workspace(mnt, at.c_str(), &what) != EPERM) return 3;
    if (std::string(what) != "unshare(CLONE_NEWNS)") return 4;
    return 0;
  });
  EXPECT_EQ(status, 0);
  close(mnt);
  fs::remove(at);
}

// Attached in the process's own namespace: a file written through the descriptor is seen at the
// path there, and the host's folder stays empty (nothing propagates back).
TEST(Workspace, AttachedInANamespaceOfItsOwnOnly) {
  REQUIRE_ROOT();
  int mnt = make_workspace(size_t(1) << 20, 16);
  ASSERT_GE(mnt, 0) << strerror(errno);
  std::string at = fresh_folder();
  ASSERT_FALSE(at.empty());
  ASSERT_EQ(write_bytes(mnt, "seen", 5), 0);
  int status = in_child([&] {
    const char* what = "";
    if (attach_workspace(mnt, at.c_str(), &what) != 0) return 1;
    struct statfs sf;
    if (statfs(at.c_str(), &sf) != 0 || long(sf.f_type) != kTmpfsMagic) return 2;
    struct stat st;
    if (stat((at + "/seen").c_str(), &st) != 0 || st.st_size != 5) return 3;
    return 0;
  });
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(fs::is_empty(at));
  struct statfs sf;
  ASSERT_EQ(statfs(at.c_str(), &sf), 0);
  EXPECT_NE(long(sf.f_type), kTmpfsMagic);
  close(mnt);
  fs::remove(at);
}

// A tree deeper than the descriptors a process may hold, with files, links and a link to a
// folder outside: removed whole, holding one descriptor at a time, and nothing outside touched.
TEST(Workspace, RemoveTreeHoldsOneDescriptorAtATime) {
  std::string outside = fresh_folder(), top = fresh_folder();
  ASSERT_FALSE(outside.empty());
  ASSERT_FALSE(top.empty());
  {
    std::ofstream(outside + "/keep") << "keep";
    std::string path = top + "/tree";
    for (int depth = 0; depth < 300; ++depth) {
      ASSERT_TRUE(fs::create_directory(path));
      std::ofstream(path + "/file") << depth;
      if (depth % 50 == 0) fs::create_directory_symlink(outside, path + "/link");
      path += "/d";
    }
  }
  int parent = open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(parent, 0);
  int status = in_child([&] {
    rlimit few{32, 32};  // far fewer than the tree's 300 levels
    if (setrlimit(RLIMIT_NOFILE, &few) != 0) return 1;
    remove_tree_at(parent, "tree");
    return 0;
  });
  EXPECT_EQ(status, 0);
  close(parent);
  EXPECT_FALSE(fs::exists(top + "/tree"));
  EXPECT_TRUE(fs::exists(outside + "/keep"));
  // A plain file's entry, and a name that is not there.
  std::ofstream(top + "/plain") << "x";
  parent = open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  remove_tree_at(parent, "plain");
  remove_tree_at(parent, "absent");
  close(parent);
  EXPECT_TRUE(fs::is_empty(top));
  fs::remove_all(outside);
  fs::remove_all(top);
}

}  // namespace
}  // namespace trex::oreval
