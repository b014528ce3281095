// `trex data gen` on a full disk, for real: the binary in a forked child whose file size limit
// (RLIMIT_FSIZE) makes the kernel refuse a write with EFBIG, as a full disk refuses one with
// ENOSPC (trex ignores SIGXFSZ, so the write fails instead of the process dying). The limit is
// set so that the refusal meets a different file each time: the run record, a dedup index file
// at its reservation, a data part of a later block, and (lowered from outside mid-run) the dedup
// files' page write-backs and growths. Each time: a non-zero exit, one line on stderr naming the
// file and the cause, every file under its final name complete, and the same command without
// the limit then writes the corpus an uninterrupted run writes, byte for byte.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"

namespace trex {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  std::string d = (fs::temp_directory_path() / ("trex_full_disk_" + name + "_" + std::to_string(getpid()))).string();
  fs::remove_all(d);
  return d;
}

// trex ARGS in a forked child, its stdout and stderr in files of their own; `in_child` runs
// between the fork and the exec (a file size limit set there holds for trex from its start).
pid_t spawn_trex(const std::vector<std::string>& args, const std::string& out, const std::string& err,
                 const std::function<void()>& in_child = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* o = std::fopen(out.c_str(), "w");
    FILE* e = std::fopen(err.c_str(), "w");
    if (!o || !e) _exit(126);
    dup2(fileno(o), 1);
    dup2(fileno(e), 2);
    if (in_child) in_child();
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(TREX_BINARY));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    setenv("TREX_PROGRESS", "off", 1);
    execv(TREX_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

struct Ended {
  bool exited = false;
  int code = -1;    // when exited
  int signal = 0;   // when not
};

Ended wait_for(pid_t pid) {
  int status = 0;
  Ended e;
  if (waitpid(pid, &status, 0) != pid) return e;
  e.exited = WIFEXITED(status);
  e.code = e.exited ? WEXITSTATUS(status) : -1;
  e.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return e;
}

// A run to the end, without a limit; its stderr must stay empty.
void run_whole(const std::vector<std::string>& args, const std::string& logs) {
  Ended e = wait_for(spawn_trex(args, logs + ".out", logs + ".err"));
  ASSERT_TRUE(e.exited && e.code == 0) << "exit " << e.code << " signal " << e.signal << "\n"
                                       << read_file(logs + ".out") << read_file(logs + ".err");
  EXPECT_EQ(read_file(logs + ".err"), "");
}

// The corpus proper: data/, cpt/ and sft/ parts by name, as bytes.
std::map<std::string, std::string> published(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const char* sub : {"data", "cpt", "sft"})
    for (const auto& e : fs::directory_iterator(dir + "/" + sub))
      files[std::string(sub) + "/" + e.path().filename().string()] = read_file(e.path().string());
  return files;
}

// What a failed run left must all be whole: no temporary and no dedup scratch file, every part
// byte for byte the uninterrupted run's part of that name, every block marker that run's marker
// (timings aside), the run record the same. Returns the blocks that have a marker.
std::set<int> check_nothing_half_written(const std::string& dir, const std::string& whole) {
  std::set<int> markers;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), dir).string(), name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "a temporary left behind: " << rel;
    EXPECT_NE(name.rfind(".dedup-", 0), 0u) << "a dedup scratch file left behind: " << rel;
    if (rel.rfind("blocks/", 0) == 0) {
      nlohmann::json mine = nlohmann::json::parse(read_file(e.path().string()));  // throws on a cut file
      nlohmann::json theirs = nlohmann::json::parse(read_file(whole + "/" + rel));
      for (const char* k : {"candidates", "exported", "generated", "accepted", "rejected", "data", "cpt", "sft"})
        EXPECT_EQ(mine[k], theirs[k]) << rel << " " << k;
      markers.insert(mine["block"].get<int>());
    } else if (rel != "manifest.json" && rel != "card.md") {  // those two hold timings
      EXPECT_TRUE(read_file(e.path().string()) == read_file(whole + "/" + rel)) << rel << " differs";
    }
  }
  // Markers are written in block order: those present are blocks 0 .. n-1.
  if (!markers.empty()) {
    EXPECT_EQ(*markers.rbegin(), int(markers.size()) - 1);
  }
  return markers;
}

// The one line on stderr, checked: "trex: error: FILE: ...: File too large\n" with FILE
// starting with `file_prefix`. Returns the line.
std::string expect_one_error_line(const std::string& err, const std::string& file_prefix) {
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  const std::string head = "trex: error: " + file_prefix;
  EXPECT_EQ(err.rfind(head, 0), 0u) << err;
  EXPECT_NE(err.find(": File too large\n"), std::string::npos) << err;
  std::printf("stderr of the failed run: %s", err.c_str());  // which file met the limit, for the log
  return err;
}

void limit_file_size(rlim_t bytes) {
  rlimit lim{bytes, bytes};
  if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(125);
}

// An uncompressed corpus of big blocks (about 5 MB of data lines each), so a data part outgrows
// the 4 MiB the dedup band table reserves at the start: a limit between the two lets every
// earlier file through and stops a part.
constexpr const char* kBigBlocks = "[run]\ncount = 1600\nseed = 7\nblock_size = 400\n";

TEST(DataCliFullDisk, EachFileThatMeetsTheLimitStopsTheRunWithOneLineAndTheResumeEqualsUninterrupted) {
  const std::string root = temp_dir("static");
  fs::create_directories(root);
  const std::string cfg = root + "/big.toml", whole = root + "/whole";
  write_file_atomic(cfg, kBigBlocks);
  auto gen = [&](const std::string& out) {
    return std::vector<std::string>{"data", "gen", "--config", cfg, "--out", out, "--quiet", "--uncompressed",
                                    "--threads", "2"};
  };
  run_whole(gen(whole), root + "/whole");
  ASSERT_FALSE(HasFailure());
  const std::map<std::string, std::string> expected = published(whole);

  // The limit for a data part: the first block b >= 1 whose data part is larger than every file
  // of the blocks before it; the limit half-way between lets blocks 0 .. b-1 through whole.
  uint64_t before = 0, limit = 0;
  int failing_block = -1;
  nlohmann::json manifest = nlohmann::json::parse(read_file(whole + "/manifest.json"));
  for (size_t b = 0; b < manifest["parts"].size(); ++b) {
    const uint64_t data = fs::file_size(whole + "/" + manifest["parts"][b]["data"].get<std::string>());
    if (b > 0 && data > before + 1024) {
      failing_block = int(b);
      limit = before + (data - before) / 2;
      break;
    }
    for (const char* kind : {"data", "cpt", "sft"})
      before = std::max<uint64_t>(before, fs::file_size(whole + "/" + manifest["parts"][b][kind].get<std::string>()));
  }
  ASSERT_GE(failing_block, 1) << "no block's data part outgrows the earlier blocks' files: pick another seed";
  ASSERT_GT(limit, uint64_t(4) << 20) << "the dedup band table (4 MiB) would meet the limit first";
  char part[64];
  std::snprintf(part, sizeof part, "/data/part-%05d.jsonl", failing_block);

  struct Case {
    const char* name;
    rlim_t limit;
    std::string file;  // the failing file's path, or its start
    std::string what;  // what failed
  };
  std::vector<Case> cases = {
      // The run record (25 KB) at the start, before any block.
      {"record", 8 << 10, "/run.json", ": write failed: "},
      // The dedup band table's reservation (posix_fallocate of 4 MiB) at the start.
      {"dedup", 1 << 20, "/.dedup-", "-bands: cannot grow a dedup index file: "},
      // Block b's data part, after blocks 0 .. b-1 were written.
      {"part", rlim_t(limit), part, ": write failed: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = root + "/" + c.name, logs = root + "/" + c.name;
    pid_t pid = spawn_trex(gen(dir), logs + ".out", logs + ".err", [lim = c.limit] { limit_file_size(lim); });
    Ended e = wait_for(pid);
    const std::string err = read_file(logs + ".err");
    ASSERT_TRUE(e.exited) << "ended by signal " << e.signal << " (SIGXFSZ not ignored?)\n" << err;
    EXPECT_EQ(e.code, 1) << "the system's refusal exits 1 (2 is bad input)\n" << read_file(logs + ".out");
    std::string prefix = dir + c.file;
    if (c.file == "/.dedup-") prefix += std::to_string(pid) + "-";
    const std::string line = expect_one_error_line(err, prefix);
    EXPECT_NE(line.find(c.what), std::string::npos) << line;

    std::set<int> markers = check_nothing_half_written(dir, whole);
    if (c.file == part) {
      EXPECT_EQ(markers.size(), size_t(failing_block)) << "the blocks before the failing one are done";
    } else {
      EXPECT_TRUE(markers.empty());
    }
    EXPECT_FALSE(fs::exists(dir + "/manifest.json"));

    // The same command, the disk no longer full: the uninterrupted run's corpus.
    run_whole(gen(dir), logs + "-resume");
    EXPECT_TRUE(published(dir) == expected) << "the resumed corpus differs from the uninterrupted one";
    if (c.file == part) {
      EXPECT_NE(read_file(logs + "-resume.out").find(std::to_string(failing_block) + " blocks resumed"),
                std::string::npos)
          << read_file(logs + "-resume.out");
    }
    fs::remove_all(dir);
  }

  // The manifest refused (a directory stands under its name, so its rename fails): every block
  // is done, and the same command writes the manifest from them.
  {
    const std::string dir = root + "/manifest", logs = root + "/manifest";
    fs::create_directories(dir + "/manifest.json");
    Ended e = wait_for(spawn_trex(gen(dir), logs + ".out", logs + ".err"));
    const std::string err = read_file(logs + ".err");
    ASSERT_TRUE(e.exited) << err;
    EXPECT_EQ(e.code, 1);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(err.rfind("trex: error: " + dir + "/manifest.json: cannot rename into place: ", 0), 0u) << err;
    fs::remove(dir + "/manifest.json");
    std::set<int> markers = check_nothing_half_written(dir, whole);
    EXPECT_EQ(markers.size(), manifest["parts"].size());
    run_whole(gen(dir), logs + "-resume");
    EXPECT_TRUE(published(dir) == expected);
    EXPECT_TRUE(fs::is_regular_file(dir + "/manifest.json"));
  }
  fs::remove_all(root);
}

// The limit lowered from outside once block 2 is done (prlimit, as an operator's `prlimit
// --fsize` would), with the smallest dedup cache (64 pages), so the dedup files' dirty pages are
// written back all the time: the next write-back (or growth) of a dedup index file past 64 KiB
// fails on the ordered pass's thread while later blocks are being built and written. Each
// block's parts stay under the limit, so the dedup file is what fails.
TEST(DataCliFullDisk, MidRunTheDedupFilesWriteBackFailsAndTheResumeEqualsUninterrupted) {
  const std::string root = temp_dir("midrun");
  fs::create_directories(root);
  const std::string cfg = root + "/small.toml", whole = root + "/whole", dir = root + "/failing";
  write_file_atomic(cfg, "[run]\ncount = 2000\nseed = 9\nblock_size = 20\n");
  // The cache's size never changes the corpus (docs/data.md), so only the failing run needs the
  // small one; the others run at the default's speed.
  auto gen = [&](const std::string& out, bool small_cache = false) {
    std::vector<std::string> args{"data", "gen", "--config", cfg, "--out", out, "--quiet", "--threads", "2"};
    if (small_cache) args.insert(args.end(), {"--dedup-memory", "0"});
    return args;
  };
  run_whole(gen(whole), root + "/whole");
  ASSERT_FALSE(HasFailure());
  constexpr rlim_t kLimit = 64 << 10;
  nlohmann::json manifest = nlohmann::json::parse(read_file(whole + "/manifest.json"));
  for (const auto& p : manifest["parts"])
    for (const char* kind : {"data", "cpt", "sft"})
      ASSERT_LT(fs::file_size(whole + "/" + p[kind].get<std::string>()), kLimit) << p[kind];

  pid_t pid = spawn_trex(gen(dir, true), root + "/failing.out", root + "/failing.err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);  // a hang guard only
  while (!fs::exists(dir + "/blocks/block-00002.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  rlimit lowered{kLimit, kLimit};
  const int lowered_rc = prlimit(pid, RLIMIT_FSIZE, &lowered, nullptr);
  const int lowered_errno = errno;
  Ended e = wait_for(pid);
  const std::string err = read_file(root + "/failing.err");
  ASSERT_EQ(lowered_rc, 0) << std::strerror(lowered_errno) << "\n" << err;
  ASSERT_TRUE(e.exited) << "ended by signal " << e.signal << "\n" << err;
  ASSERT_NE(e.code, 0) << "the run finished before its limit was lowered:\n" << read_file(root + "/failing.out");
  EXPECT_EQ(e.code, 1) << "the system's refusal exits 1 (2 is bad input)";
  const std::string line = expect_one_error_line(err, dir + "/.dedup-" + std::to_string(pid) + "-");
  EXPECT_NE(line.find(" a dedup index file: "), std::string::npos) << line;

  std::set<int> markers = check_nothing_half_written(dir, whole);
  EXPECT_GE(markers.size(), 3u);
  EXPECT_LT(markers.size(), manifest["parts"].size());
  EXPECT_FALSE(fs::exists(dir + "/manifest.json"));

  run_whole(gen(dir), root + "/resume");
  EXPECT_TRUE(published(dir) == published(whole)) << "the resumed corpus differs from the uninterrupted one";
  EXPECT_NE(read_file(root + "/resume.out").find(std::to_string(markers.size()) + " blocks resumed"), std::string::npos)
      << read_file(root + "/resume.out");
  fs::remove_all(root);
}

// The last shard to finish merges the shards' manifests; a refused write there (a directory
// stands under manifest.json, so its rename fails) is the system's refusal like any other: exit 1
// and one line naming manifest.json, not taken for "another shard has not finished" (exit 0, no
// merged manifest, no word). Once the way is clear, re-running the last shard merges.
TEST(DataCliFullDisk, TheLastShardsMergeRefusedExitsOneWithOneLine) {
  const std::string root = temp_dir("merge");
  fs::create_directories(root);
  const std::string dir = root + "/out";
  auto gen = [&](const char* shard) {
    return std::vector<std::string>{"data", "gen", "--count", "30", "--seed", "2", "--shard", shard, "--out", dir,
                                    "--quiet"};
  };
  run_whole(gen("0/2"), root + "/first");  // shard 1 has not run: no merge, exit 0
  ASSERT_FALSE(HasFailure());
  ASSERT_FALSE(fs::exists(dir + "/manifest.json"));
  fs::create_directories(dir + "/manifest.json");
  Ended e = wait_for(spawn_trex(gen("1/2"), root + "/last.out", root + "/last.err"));
  const std::string err = read_file(root + "/last.err");
  ASSERT_TRUE(e.exited) << err;
  EXPECT_EQ(e.code, 1) << read_file(root + "/last.out") << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.rfind("trex: error: " + dir + "/manifest.json: cannot rename into place: ", 0), 0u) << err;
  EXPECT_TRUE(fs::is_regular_file(dir + "/manifest-shard-1-of-2.json"));  // the shard itself is done
  for (const auto& f : fs::directory_iterator(dir))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << f.path();

  fs::remove(dir + "/manifest.json");
  run_whole(gen("1/2"), root + "/again");
  nlohmann::json m = nlohmann::json::parse(read_file(dir + "/manifest.json"));
  EXPECT_EQ(m["shard"]["merged"], true);
  EXPECT_TRUE(fs::is_regular_file(dir + "/card.md"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace trex
