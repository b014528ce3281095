// What a sandboxed program leaves under a name the evaluator reads is refused, before a byte
// is read, unless it is a plain regular file within the cap: symbolic links (to a file the
// program could not read), FIFOs (which would block), devices, sockets, hard links,
// directories, huge files.
#include "trex/oreval/left_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

struct Folder {
  std::string path;
  int fd = -1;
  Folder() {
    path = (fs::temp_directory_path() / "trex-left-XXXXXX").string();
    if (!mkdtemp(path.data())) throw std::runtime_error("mkdtemp");
    fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~Folder() {
    close(fd);
    fs::remove_all(path);
  }
  std::string at(const std::string& name) const { return path + "/" + name; }
};

std::string refusal(const Folder& d, const std::string& name, size_t cap = 1 << 20) {
  try {
    read_left_file(d.fd, name, cap);
  } catch (const LeftFileError& e) {
    return e.what();
  }
  return "read";
}

TEST(LeftFile, PlainFileIsReadAndAbsentIsNothing) {
  Folder d;
  std::ofstream(d.at("a.json")) << "{\"x\": 1}";
  auto text = read_left_file(d.fd, "a.json", 100);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "{\"x\": 1}");
  EXPECT_FALSE(read_left_file(d.fd, "absent.json", 100));
}

TEST(LeftFile, SymbolicLinkIsNotFollowed) {
  Folder d;
  std::string secret = d.at("secret");
  std::ofstream(secret) << "S3CRET";
  fs::create_symlink(secret, d.at("__trex_final.json"));
  std::string why = refusal(d, "__trex_final.json");
  EXPECT_EQ(why, "__trex_final.json: is a symbolic link; not read");
  fs::create_symlink("/etc/shadow", d.at("model.lp"));
  EXPECT_EQ(refusal(d, "model.lp"), "model.lp: is a symbolic link; not read");
}

TEST(LeftFile, FifoIsRefusedWithoutWaiting) {
  Folder d;
  ASSERT_EQ(mkfifo(d.at("__trex_solve.json").c_str(), 0666), 0);
  EXPECT_EQ(refusal(d, "__trex_solve.json"), "__trex_solve.json: is a FIFO; not read");
}

TEST(LeftFile, SocketDirectoryAndHardLinkAreRefused) {
  Folder d;
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sock = d.at("model.lp");
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(refusal(d, "model.lp"), "model.lp: is a socket; not read");
  close(s);
  fs::create_directory(d.at("__trex_final.json"));
  EXPECT_EQ(refusal(d, "__trex_final.json"), "__trex_final.json: is a directory; not read");
  std::ofstream(d.at("other")) << "someone else's";
  fs::create_hard_link(d.at("other"), d.at("__trex_solve.json"));
  EXPECT_EQ(refusal(d, "__trex_solve.json"), "__trex_solve.json: has 2 links; not read");
}

TEST(LeftFile, DeviceIsRefused) {
  Folder d;
  if (mknod(d.at("model.lp").c_str(), S_IFCHR | 0666, makedev(1, 5)) != 0)  // /dev/zero
    GTEST_SKIP() << "cannot make a device node here (needs CAP_MKNOD): " << strerror(errno);
  EXPECT_EQ(refusal(d, "model.lp"), "model.lp: is a character device; not read");
}

TEST(LeftFile, HugeFileIsRefusedUnread) {
  Folder d;
  {
    std::ofstream f(d.at("model.lp"));
    f << std::string(4096, 'x');
  }
  EXPECT_EQ(refusal(d, "model.lp", 4095), "model.lp: is larger than 4095 bytes; not read");
  EXPECT_EQ(refusal(d, "model.lp", 4096), "read");
  // A sparse file of 16 GiB costs nothing to refuse.
  int fd = open(d.at("big").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, off_t(1) << 34), 0);
  close(fd);
  EXPECT_EQ(refusal(d, "big"), "big: is larger than 1048576 bytes; not read");
  EXPECT_EQ(refusal(d, "../etc/passwd"), "../etc/passwd: not a plain file name; not read");
}

}  // namespace
}  // namespace trex::oreval
