// `trex data` as a user meets it: the real binary in a separate process, real files, bad
// input, and a run killed with SIGKILL and resumed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

namespace fs = std::filesystem;

ProcessResult trex_run(const std::vector<std::string>& args, double timeout = 120) {
  std::vector<std::string> argv{TREX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = timeout;
  return run_process(argv, o);
}

std::string temp_dir(const std::string& name) {
  std::string d = (fs::temp_directory_path() / ("trex_data_cli_" + name + "_" + std::to_string(getpid()))).string();
  fs::remove_all(d);
  return d;
}

std::map<std::string, std::string> published(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const char* sub : {"data", "cpt", "sft"})
    for (const auto& e : fs::directory_iterator(dir + "/" + sub))
      if (e.path().filename().string().find(".tmp.") == std::string::npos)
        files[std::string(sub) + "/" + e.path().filename().string()] = read_file(e.path().string());
  return files;
}

TEST(DataCli, FamiliesListsEveryContract) {
  ProcessResult r = trex_run({"data", "families", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_GE(j.size(), 16u);
  for (const auto& f : j) {
    EXPECT_GE(f["industries"].size(), 4u);
    EXPECT_FALSE(f["params"].empty());
    for (const auto& p : f["params"]) EXPECT_LE(p["min"].get<double>(), p["max"].get<double>());
  }
  ProcessResult text = trex_run({"data", "families"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("tsp_mtz"), std::string::npos);
}

TEST(DataCli, GenThenCheckAgrees) {
  std::string dir = temp_dir("gen");
  ProcessResult g = trex_run({"data", "gen", "--count", "40", "--seed", "3", "--out", dir, "--quiet"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("40 samples"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("throughput"), std::string::npos);
  ProcessResult c = trex_run({"data", "check", dir});
  EXPECT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("0 disagreements"), std::string::npos) << c.out;
  // The gurobipy programs run for real (python3 with trex's gurobipy module) and build the LP's model.
  if (fs::exists("/usr/bin/python3")) {
    ProcessResult x = trex_run({"data", "check", dir, "--execute", "4"});
    EXPECT_EQ(x.exit_code, 0) << x.out << x.err;
    EXPECT_NE(x.out.find("executed 4 gurobipy programs"), std::string::npos) << x.out;
  }
  fs::remove_all(dir);
}

TEST(DataCli, KilledAndResumedEqualsUninterrupted) {
  std::string whole = temp_dir("whole"), killed = temp_dir("killed"), cfg = temp_dir("cfg") + ".toml";
  write_file_atomic(cfg, "[run]\ncount = 150\nseed = 4\nblock_size = 10\n");
  ASSERT_EQ(trex_run({"data", "gen", "--config", cfg, "--out", whole, "--quiet", "--threads", "2"}).exit_code, 0);
  // SIGKILL (the whole process group) part-way, then the same command again.
  ProcessResult k = trex_run({"data", "gen", "--config", cfg, "--out", killed, "--quiet", "--threads", "2"}, 0.4);
  if (!k.timed_out) GTEST_LOG_(INFO) << "the first run finished before the kill; resume is then a no-op";
  ProcessResult again = trex_run({"data", "gen", "--config", cfg, "--out", killed, "--quiet", "--threads", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(published(whole), published(killed));
  fs::remove_all(whole);
  fs::remove_all(killed);
  fs::remove(cfg);
}

TEST(DataCli, BadInputIsOneLineAndWritesNothing) {
  std::string dir = temp_dir("bad"), cfg = temp_dir("badcfg") + ".toml";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  write_file_atomic(cfg, "[run]\ncount = 10\n[families.knapsack]\nparams.size = [2, 40]\n");
  std::vector<Case> cases = {
      {{"data", "gen", "--families", "knapsack,no_such", "--out", dir}, "unknown family 'no_such'"},
      {{"data", "gen", "--config", cfg, "--out", dir}, ".toml:4: families.knapsack.params.size: [2, 40] is outside"},
      {{"data", "gen", "--shard", "2/2", "--out", dir}, "--shard"},
      {{"data", "gen", "--count", "0", "--out", dir}, "--count"},
      {{"data", "gen", "--dedup-memory", "-1", "--out", dir}, "--dedup-memory"},
      {{"data", "gen", "--program-style", "inline", "--out", dir}, "--program-style: must be plain or statement-data"},
  };
  for (const Case& c : cases) {
    ProcessResult r = trex_run(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("trex: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir)) << "wrote output for bad input";
  }
  write_file_atomic(cfg, "[run]\ncount = 10\nprogram_style = \"inline\"\n");
  ProcessResult style = trex_run({"data", "gen", "--config", cfg, "--out", dir});
  EXPECT_EQ(style.exit_code, 2);
  EXPECT_NE(style.err.find(".toml:3: run.program_style: must be \"plain\" or \"statement-data\""), std::string::npos) << style.err;
  EXPECT_FALSE(fs::exists(dir));
  write_file_atomic(cfg, "[run]\ncount = 10\n[families.tsp_mtz]\nmodes = { infeasible = 1.0 }\n");
  ProcessResult r = trex_run({"data", "gen", "--config", cfg, "--out", dir});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tsp_mtz cannot produce infeasible instances"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir));
  ProcessResult missing = trex_run({"data", "check", dir});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("not a corpus directory"), std::string::npos) << missing.err;
  fs::remove(cfg);
}

// A family and mode whose parameter ranges admit no instance that passes the checks (here no
// infeasible transportation problem: every destination needs 1 unit) ran for ever, writing empty
// blocks. Now the run stops once the mode has had 100 candidates and exported none: one line
// naming the family and mode and why its candidates were rejected, exit 2, at the same block
// whatever the threads; the blocks before it stay whole, and the same command stops there again.
TEST(DataCli, AParameterRangeThatAdmitsNoInstanceOfAModeStopsWithOneLine) {
  std::string cfg = temp_dir("no_instance_cfg") + ".toml";
  write_file_atomic(cfg,
                    "[run]\ncount = 50\nblock_size = 10\n[families.transportation]\nparams.demand = [1, 1]\n"
                    "modes = { infeasible = 1.0 }\n");
  const std::string says =
      "trex: error: families.transportation.modes.infeasible: none of 100 infeasible candidates was exported "
      "(feasibility_mismatch 100); its parameter ranges admit no infeasible instance";
  // Each thread count in a folder of its own (the same block whatever the threads), then the
  // same command again in the first folder (a resume replays the markers and stops there again).
  const std::string by_threads[2] = {temp_dir("no_instance_t2"), temp_dir("no_instance_t1")};
  auto stops_after_block_9 = [&](const std::string& dir, const char* threads) {
    SCOPED_TRACE(dir + " --threads " + threads);
    ProcessResult r = trex_run({"data", "gen", "--config", cfg, "--out", dir, "--quiet", "--threads", threads});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind(says, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    // Blocks 0-9 (10 candidates each) are done and hold nothing; those built ahead of the
    // failing block are not written.
    for (int b = 0; b < 12; ++b) {
      char name[64];
      std::snprintf(name, sizeof name, "/blocks/block-%05d.json", b);
      EXPECT_EQ(fs::exists(dir + name), b < 10) << name;
    }
    EXPECT_EQ(nlohmann::json::parse(read_file(dir + "/blocks/block-00009.json"))["exported"], 0);
    EXPECT_FALSE(fs::exists(dir + "/manifest.json"));
    return r.err;
  };
  const std::string two = stops_after_block_9(by_threads[0], "2");
  EXPECT_EQ(stops_after_block_9(by_threads[1], "1"), two);
  for (int b = 0; b < 10; ++b) {  // the same blocks, counted alike (timings aside)
    char name[64];
    std::snprintf(name, sizeof name, "/blocks/block-%05d.json", b);
    nlohmann::json a = nlohmann::json::parse(read_file(by_threads[0] + name));
    nlohmann::json c = nlohmann::json::parse(read_file(by_threads[1] + name));
    for (const char* k : {"candidates", "exported", "generated", "accepted", "rejected", "modes"})
      EXPECT_EQ(a[k], c[k]) << name << " " << k;
  }
  EXPECT_EQ(stops_after_block_9(by_threads[0], "1"), two);  // the resume
  const std::string dir = by_threads[0];
  fs::remove_all(by_threads[1]);
  // In a mixture the other family and the mode that works are exported, and the run still stops:
  // without the check it would end with no infeasible transportation sample, silently.
  std::string mixed = temp_dir("no_instance_mixed");
  write_file_atomic(cfg,
                    "[run]\ncount = 3000\nblock_size = 50\n[families.knapsack]\nweight = 1.0\n"
                    "[families.transportation]\nweight = 1.0\nparams.demand = [1, 1]\n"
                    "modes = { feasible = 0.5, infeasible = 0.5 }\n");
  ProcessResult m = trex_run({"data", "gen", "--config", cfg, "--out", mixed, "--quiet"});
  EXPECT_EQ(m.exit_code, 2) << m.out << m.err;
  EXPECT_EQ(m.err.rfind("trex: error: families.transportation.modes.infeasible: none of ", 0), 0u) << m.err;
  EXPECT_NE(m.err.find(" infeasible candidates was exported (feasibility_mismatch "), std::string::npos) << m.err;
  EXPECT_EQ(std::count(m.err.begin(), m.err.end(), '\n'), 1) << m.err;
  nlohmann::json first = nlohmann::json::parse(read_file(mixed + "/blocks/block-00000.json"));
  EXPECT_GT(first["accepted"].value("knapsack", 0), 0) << first.dump();
  EXPECT_GT(first["modes"]["transportation feasible"]["exported"].get<long>(), 0) << first.dump();
  EXPECT_EQ(first["modes"]["transportation infeasible"]["exported"].get<long>(), 0) << first.dump();
  EXPECT_FALSE(fs::exists(mixed + "/manifest.json"));
  for (const std::string& d : {dir, mixed, cfg}) fs::remove_all(d);
}

// An --against corpus that is cut off, or compressed under a plain name: one line naming the
// bad part, exit 2, before any block (no part or marker written); with the corpus repaired the
// same command runs.
TEST(DataCli, ABadAgainstCorpusIsOneLineNamingThePartBeforeAnyBlock) {
  std::string earlier = temp_dir("against_earlier"), out = temp_dir("against_out");
  ASSERT_EQ(trex_run({"data", "gen", "--count", "20", "--seed", "6", "--out", earlier, "--quiet"}).exit_code, 0);
  const std::string part = earlier + "/data/part-00000.jsonl.zst", plain = earlier + "/data/part-00000.jsonl";
  const std::string bytes = read_file(part);
  auto nothing_written = [&] {
    for (const char* sub : {"data", "cpt", "sft", "blocks"}) {
      EXPECT_TRUE(!fs::exists(out + "/" + sub) || fs::is_empty(out + "/" + sub)) << sub;
    }
    EXPECT_FALSE(fs::exists(out + "/manifest.json"));
  };
  const std::vector<std::string> gen = {"data", "gen", "--count", "10", "--seed", "6", "--against", earlier,
                                        "--out", out, "--quiet"};
  write_file_atomic(part, bytes.substr(0, bytes.size() / 2));  // cut off mid-frame
  ProcessResult cut = trex_run(gen);
  EXPECT_EQ(cut.exit_code, 2) << cut.err;
  EXPECT_EQ(cut.err.rfind("trex: error: " + part + ": ", 0), 0u) << cut.err;
  EXPECT_EQ(std::count(cut.err.begin(), cut.err.end(), '\n'), 1) << cut.err;
  nothing_written();

  fs::remove(part);
  write_file_atomic(plain, bytes);  // zstd data under a plain .jsonl name: refused, never read as text
  ProcessResult mislabelled = trex_run(gen);
  EXPECT_EQ(mislabelled.exit_code, 2) << mislabelled.err;
  EXPECT_EQ(mislabelled.err.rfind("trex: error: " + plain + ": ", 0), 0u) << mislabelled.err;
  EXPECT_EQ(std::count(mislabelled.err.begin(), mislabelled.err.end(), '\n'), 1) << mislabelled.err;
  nothing_written();

  fs::remove(plain);
  write_file_atomic(part, bytes);
  ProcessResult ok = trex_run(gen);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  nlohmann::json m = nlohmann::json::parse(read_file(out + "/manifest.json"));
  long dups = 0;
  for (const auto& [k, v] : m["per_reason"].items())
    if (k.rfind("duplicate_", 0) == 0) dups += v["count"].get<long>();
  EXPECT_GE(dups, 20) << "the earlier corpus's 20 samples (the same seed) count as seen";
  fs::remove_all(earlier);
  fs::remove_all(out);
}

// mpirun -n ranks trex ARGS, as root too (a test may run as root; no user needs these).
ProcessResult mpirun_trex(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env",    "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                   "mpirun", "-n",                       std::to_string(ranks),
                                   "--oversubscribe", "--bind-to",       "none",
                                   TREX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 600;  // a hang guard only
  return run_process(argv, o);
}

// A mixture that makes near duplicates (two families, a low threshold) in small blocks, and a
// count that ends inside block 6: under 2 ranks, rank 1's block 7 of the last round is built
// and not needed.
constexpr const char* kDuplicatingMixture = R"([run]
count = 70
block_size = 12
near_duplicate_threshold = 0.4

[families.knapsack]
weight = 1.0

[families.product_mix]
weight = 1.0
)";

nlohmann::json counts_of(const std::string& dir) {
  nlohmann::json m = nlohmann::json::parse(read_file(dir + "/manifest.json"));
  nlohmann::json c = {{"samples", m["samples"]}, {"candidates", m["candidates"]}, {"per_family", m["per_family"]}};
  for (const auto& [k, v] : m["per_reason"].items()) c["per_reason"][k] = v["count"];
  c["structures"] = m["diversity"]["distinct_structures"];
  return c;
}

// The stop rule of a mode that exports nothing counts every block in block order under MPI too:
// 2 ranks stop with the message one process gives, after the same block (9: rounds of two
// blocks end there), and so do their resume and a one-process resume of their folder. (Each
// rank counting only its own blocks ran on past block 9, and its resume stopped at block 9.)
TEST(DataCli, UnderMpirunAModeThatExportsNothingStopsWhereOneProcessStops) {
  if (!program_available("mpirun")) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  const std::string dir = temp_dir("mpi_no_instance"), cfg = dir + ".toml";
  write_file_atomic(cfg,
                    "[run]\ncount = 50\nblock_size = 10\n[families.transportation]\nparams.demand = [1, 1]\n"
                    "modes = { infeasible = 1.0 }\n");
  const std::string says =
      "trex: error: families.transportation.modes.infeasible: none of 100 infeasible candidates was exported "
      "(feasibility_mismatch 100); its parameter ranges admit no infeasible instance";
  const std::vector<std::string> gen = {"data", "gen", "--config", cfg, "--out", dir, "--quiet", "--threads", "1"};
  // Under mpirun each rank's line names it ("trex: error: rank 1: families...") and says what
  // one process says; the first rank to stop aborts the job, so the other's line may be cut.
  const std::string rank_says = ": " + says.substr(std::string("trex: error: ").size());
  auto stopped_after_block_9 = [&](const ProcessResult& r, const char* what, bool mpi = true) {
    SCOPED_TRACE(what);
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find(mpi ? "trex: error: rank " : says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(mpi ? rank_says : says), std::string::npos) << r.err;
    for (int b = 0; b < 22; ++b) {
      char name[64];
      std::snprintf(name, sizeof name, "/blocks/block-%05d.json", b);
      EXPECT_EQ(fs::exists(dir + name), b < 10) << name;
    }
    EXPECT_FALSE(fs::exists(dir + "/manifest.json"));
  };
  stopped_after_block_9(mpirun_trex(2, gen), "the run, 2 ranks");
  stopped_after_block_9(mpirun_trex(2, gen), "its resume, 2 ranks");
  ProcessResult one = trex_run(gen);
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_EQ(one.err.rfind(says, 0), 0u) << one.err;
  stopped_after_block_9(one, "its resume, one process", false);
  fs::remove_all(dir);
  fs::remove(cfg);
}

TEST(DataCli, UnderMpirunTheRanksWriteTheOneProcessCorpusByteForByte) {
  if (!program_available("mpirun")) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  std::string one = temp_dir("mpi_one"), two = temp_dir("mpi_two");
  fs::create_directories(one);
  std::string config = one + ".toml";
  write_file_atomic(config, kDuplicatingMixture);
  ProcessResult r1 = trex_run({"data", "gen", "--config", config, "--seed", "4", "--out", one, "--quiet"}, 600);
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  ProcessResult r2 = mpirun_trex(2, {"data", "gen", "--config", config, "--seed", "4", "--out", two, "--quiet",
                                     "--threads", "1"});
  ASSERT_EQ(r2.exit_code, 0) << r2.out << r2.err;
  EXPECT_NE(r2.out.find("2 MPI ranks x 1 threads, deduplicated together"), std::string::npos) << r2.out;

  // The same files, compressed parts compared as bytes, and the same counts in the manifest.
  std::map<std::string, std::string> expected = published(one);
  EXPECT_EQ(expected.size(), 3u * 7u);  // blocks 0-6: block 7 was not needed
  EXPECT_EQ(published(two), expected);
  EXPECT_EQ(counts_of(two), counts_of(one));
  EXPECT_FALSE(fs::exists(two + "/blocks/block-00007.json"));
  EXPECT_FALSE(fs::exists(two + "/manifest-shard-0-of-2.json"));

  // Duplicates across ranks were removed: some rejected sample duplicates one from a block of
  // the other rank (block b is rank b % 2's), and the one process rejected the same ones.
  int across = 0;
  for (int b = 0; b < 7; ++b) {
    char name[64];
    std::snprintf(name, sizeof name, "/blocks/block-%05d.json", b);
    nlohmann::json blk = nlohmann::json::parse(read_file(two + name));
    for (const auto& [k, examples] : blk["examples"].items())
      for (const auto& e : examples) {
        std::string of = e["detail"].get<std::string>();  // "duplicates family-s4-0000017"
        long index = std::stol(of.substr(of.rfind('-') + 1));
        across += (index / 12) % 2 != b % 2;
      }
  }
  EXPECT_GT(across, 0);
  EXPECT_GT(counts_of(one)["per_reason"]["duplicate_near"].get<long>(), 0);
  EXPECT_EQ(trex_run({"data", "check", two}, 600).exit_code, 0);

  // A killed run resumes under any number of ranks: without block 3's marker (a rank finished
  // block 4 first), blocks 0-2 are replayed and the rest built again, to the same bytes.
  fs::remove(two + "/blocks/block-00003.json");
  fs::remove(two + "/data/part-00005.jsonl.zst");
  fs::remove(two + "/blocks/block-00005.json");
  fs::remove(two + "/manifest.json");
  ProcessResult r3 = mpirun_trex(3, {"data", "gen", "--config", config, "--seed", "4", "--out", two, "--quiet",
                                     "--threads", "1"});
  ASSERT_EQ(r3.exit_code, 0) << r3.out << r3.err;
  EXPECT_NE(r3.out.find("3 blocks resumed"), std::string::npos) << r3.out;
  EXPECT_EQ(published(two), expected);
  EXPECT_EQ(counts_of(two), counts_of(one));

  // A directory of another configuration: one line, exit 2, from the ranks together.
  ProcessResult bad = mpirun_trex(2, {"data", "gen", "--config", config, "--seed", "5", "--out", two, "--quiet"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("run.json: this directory holds a run with a different configuration"), std::string::npos)
      << bad.err;
  for (const std::string& d : {one, two, config}) fs::remove_all(d);
}

TEST(DataCli, ShardsDeduplicateAloneAndTheLastOneMerges) {
  std::string dir = temp_dir("shards");
  ProcessResult a = trex_run({"data", "gen", "--count", "30", "--seed", "2", "--shard", "1/2", "--out", dir, "--quiet"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_FALSE(fs::exists(dir + "/manifest.json"));  // shard 0 has not run
  ProcessResult b = trex_run({"data", "gen", "--count", "30", "--seed", "2", "--shard", "0/2", "--out", dir, "--quiet"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("merged manifest"), std::string::npos) << b.out;
  nlohmann::json m = nlohmann::json::parse(read_file(dir + "/manifest.json"));
  EXPECT_EQ(m["samples"], 30);
  EXPECT_EQ(m["shard"]["merged"], true);
  fs::remove_all(dir);
}

// The merge fails closed: a shard whose manifest records another configuration stops the last
// shard with one line naming that manifest (it had exited 0 with no merged manifest).
TEST(DataCli, TheLastShardRefusesToMergeAShardOfAnotherConfiguration) {
  std::string dir = temp_dir("shards-mixed");
  ProcessResult a = trex_run({"data", "gen", "--count", "30", "--seed", "2", "--shard", "1/2", "--out", dir, "--quiet"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const std::string other = dir + "/manifest-shard-1-of-2.json";
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(read_file(other));
  m["config"]["seed"] = 3;
  write_file_atomic(other, m.dump(2) + "\n");
  ProcessResult b = trex_run({"data", "gen", "--count", "30", "--seed", "2", "--shard", "0/2", "--out", dir, "--quiet"});
  EXPECT_EQ(b.exit_code, 2) << b.out << b.err;
  EXPECT_EQ(std::count(b.err.begin(), b.err.end(), '\n'), 1) << b.err;
  EXPECT_NE(b.err.find(other + ": a different configuration from shard 0"), std::string::npos) << b.err;
  EXPECT_FALSE(fs::exists(dir + "/manifest.json"));
  fs::remove_all(dir);
}

TEST(DataCli, CheckReportsACorruptLineByNumber) {
  std::string dir = temp_dir("corrupt");
  ASSERT_EQ(trex_run({"data", "gen", "--count", "12", "--seed", "8", "--out", dir, "--quiet", "--uncompressed"}).exit_code, 0);
  std::string part = dir + "/data/part-00000.jsonl";
  std::string text = read_file(part);
  size_t second = text.find('\n') + 1;
  text.insert(second, "this is not json\n");
  write_file_atomic(part, text);
  ProcessResult c = trex_run({"data", "check", dir});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("part-00000.jsonl:2: corrupt"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("12 samples"), std::string::npos) << c.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trex
