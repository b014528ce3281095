// `trex aura` as the real binary: a small real tune that writes a tuning file the kernels accept
// and records its skill, the model, and one-line errors (exit 2, nothing overwritten) for an
// unknown kernel or shape, a zero budget, a corrupt tuning file and a corrupt skill database.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sqlite3.h>

#include "nlohmann/json.hpp"
#include "trex/aura/skills.h"
#include "trex/kernels/tuning.h"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

ProcessOptions limit(double s) {
  ProcessOptions o;
  o.timeout_s = s;
  return o;
}

std::string dir() {
  auto d = std::filesystem::temp_directory_path() / ("trex_aura_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_one_line_error(const ProcessResult& p, const std::string& needle) {
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  EXPECT_NE(p.err.find(needle), std::string::npos) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
}

TEST(AuraCommand, TuneWritesATuningFileAndASkill) {
  const std::string d = dir(), out = d + "/tuning.toml", db = d + "/skills.db";
  std::filesystem::remove(out);
  std::filesystem::remove(db);
  ProcessResult p = run_process({TREX_BINARY, "aura", "tune", "swiglu.fwd", "--shape", "64x1024", "--budget", "6",
                                 "--threads", "2", "--min-time", "0.005", "--out", out, "--skills", db, "--json",
                                 "--min-gain", "0"},
                                limit(120));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_LE(j["measured"].get<int>(), 6);
  EXPECT_GE(j["tree"].size(), 2u);
  EXPECT_FALSE(j["diagnosis"]["regime"].get<std::string>().empty());
  EXPECT_GT(j["model"]["variables"].get<int>(), 0);
  for (const auto& n : j["tree"]) EXPECT_TRUE(n["passed"].get<bool>()) << n.dump();
  kernels::Tuning t = kernels::Tuning::load(out);
  ASSERT_NE(t.find("swiglu.fwd", "64x1024"), nullptr);
  // The kernels accept the file.
  ProcessResult c = run_process({TREX_BINARY, "kernels", "check", "--kernel", "swiglu.fwd", "--seeds", "1",
                                 "--tuning", out}, limit(60));
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  // Whether the search found a gain depends on the machine's timing: a skill and its database
  // exist exactly when it did.
  if (j["skill_recorded"].get<int>() > 0) {
    ProcessResult s = run_process({TREX_BINARY, "aura", "skills", "--skills", db, "--json"}, limit(30));
    ASSERT_EQ(s.exit_code, 0) << s.err;
    EXPECT_EQ(nlohmann::json::parse(s.out).size(), 1u);
  } else {
    ProcessResult s = run_process({TREX_BINARY, "aura", "skills", "--skills", db, "--json"}, limit(30));
    EXPECT_FALSE(std::filesystem::exists(db) && s.exit_code != 0) << s.err;
    if (std::filesystem::exists(db)) {
      EXPECT_EQ(nlohmann::json::parse(s.out).size(), 0u);
    }
  }
}

TEST(AuraCommand, TuneLearnsFromSkillsObservationsAndNeverMeasuresWhatTheyRuleOut) {
  const std::string d = dir(), db = d + "/prior.db";
  std::filesystem::remove(db);
  // The hardware features this run's skills must carry (one measured candidate).
  ProcessResult probe = run_process({TREX_BINARY, "aura", "tune", "swiglu.fwd", "--shape", "64x1024", "--budget", "1",
                                     "--threads", "1", "--min-time", "0.002", "--no-skills", "--json"},
                                    limit(120));
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const std::string features = nlohmann::json::parse(probe.out)["hardware"].get<std::string>();
  // Two earlier searches of this shape class found non-temporal stores 1.5x slower everywhere.
  {
    aura::SkillStore store(db);
    for (int i = 0; i < 2; ++i) {
      aura::Skill k{0, "swiglu.fwd", "64x1024", features, "block_elems 16384->8192", {{"block_elems", 8192}, {"stream", 1}},
                    1.05, "test", "", 0, {}};
      for (int64_t be : {4096, 8192, 16384, 32768}) {
        k.observations.push_back({{{"block_elems", be}, {"stream", 1}}, be == 8192 ? 1.0 : 1.02});
        k.observations.push_back({{{"block_elems", be}, {"stream", 2}}, 1.5});
      }
      store.add(k);
    }
  }
  ProcessResult p = run_process({TREX_BINARY, "aura", "tune", "swiglu.fwd", "--shape", "64x1024", "--budget", "5",
                                 "--threads", "1", "--min-time", "0.002", "--skills", db, "--json"},
                                limit(120));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["skills_used"].get<int>(), 2);
  ASSERT_EQ(j["prior_rules"].size(), 1u) << j["prior_rules"].dump();
  EXPECT_EQ(j["prior_rules"][0].get<std::string>().rfind("stream=2 ", 0), 0u) << j["prior_rules"].dump();
  // Both skills' best block is 8192 elements of the same shape: every transfer agrees, so the
  // first scale (the row) is kept.
  ASSERT_EQ(j["prior_transfers"].size(), 1u) << j["prior_transfers"].dump();
  EXPECT_EQ(j["prior_transfers"][0].get<std::string>(), "block_elems: ratio to 1024");
  // The built-in was profiled before the search; no node of the tree uses the ruled-out stores.
  for (const auto& n : j["tree"]) EXPECT_EQ(n["config"]["stream"].get<int>(), 1) << n.dump();
}

TEST(AuraCommand, ModelPrintsTheProgramsStart) {
  ProcessResult p = run_process({TREX_BINARY, "aura", "model", "gemm", "--shape", "256x256x256", "--threads", "2",
                                 "--json", "--hw", std::string(TREX_SOURCE_DIR) + "/tests/aura/fixtures/cpu.toml"},
                                limit(60));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j["program"]["status"], "optimal");
  EXPECT_TRUE(j["start"].contains("kc"));
  EXPECT_GT(j["directions"].size(), 3u);
}

TEST(AuraCommand, BadInputIsOneLineAndExitTwo) {
  const std::string d = dir();
  const std::string none = d + "/none.db";
  std::filesystem::remove(none);
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "nope", "--skills", none}, limit(30)),
                        "not a tunable kernel");
  EXPECT_FALSE(std::filesystem::exists(none));  // nothing created on bad input
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "gemm", "--shape", "12x12"}, limit(30)),
                        "--shape");
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "gemm", "--budget", "0"}, limit(30)), "--budget");
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "gemm", "--timing", "mean", "--skills", none}, limit(30)),
                        "--timing");
  expect_one_line_error(run_process({TREX_BINARY, "aura", "exhaustive", "gemm", "--timing", "mean"}, limit(30)),
                        "--timing");
  EXPECT_FALSE(std::filesystem::exists(none));
  const std::string never = d + "/never.toml";
  std::filesystem::remove(never);
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "gemm", "--verify", "-1", "--out", never,
                                     "--skills", none},
                                    limit(30)),
                        "--verify");
  EXPECT_FALSE(std::filesystem::exists(never));
  EXPECT_FALSE(std::filesystem::exists(none));
  const std::string bad_toml = d + "/bad.toml";
  { std::ofstream(bad_toml) << "[[kernel]]\nname = \"gemm\"\nkc = 7\n"; }
  const std::string before = slurp(bad_toml);
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "gemm", "--out", bad_toml, "--no-skills"}, limit(30)),
                        "bad.toml:3");
  EXPECT_EQ(slurp(bad_toml), before);
  const std::string bad_db = d + "/bad.db";
  { std::ofstream(bad_db) << "not sqlite at all, but long enough to have a header of sorts......"; }
  const std::string db_before = slurp(bad_db);
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "gemm", "--skills", bad_db}, limit(30)),
                        "not a trex skill database");
  EXPECT_EQ(slurp(bad_db), db_before);
  expect_one_line_error(run_process({TREX_BINARY, "aura", "skills", "--skills", bad_db}, limit(30)),
                        "not a trex skill database");
  expect_one_line_error(run_process({TREX_BINARY, "kernels", "check", "--kernel", "gemm", "--tuning", bad_toml}, limit(30)),
                        "bad.toml:3");
}

// The other subcommands and the other ways a file can be bad: `model` and `exhaustive` with an
// unknown kernel or shape; a real skill database with a malformed row, and one cut short; a
// corrupt tuning file named by $TREX_TUNING. Each: one line, exit 2, the file unchanged.
TEST(AuraCommand, BadInputOfEverySubcommandAndFile) {
  const std::string d = dir();
  for (const char* sub : {"model", "exhaustive"}) {
    expect_one_line_error(run_process({TREX_BINARY, "aura", sub, "nope"}, limit(30)), "not a tunable kernel");
    expect_one_line_error(run_process({TREX_BINARY, "aura", sub, "gemm", "--shape", "1x2"}, limit(30)), "--shape");
    expect_one_line_error(run_process({TREX_BINARY, "aura", sub, "rmsnorm.fwd", "--shape", "0x64"}, limit(30)),
                          "--shape");
  }
  // A trex skill database whose one skill's configuration text is malformed.
  const std::string rows = d + "/bad_row.db";
  std::filesystem::remove(rows);
  {
    aura::SkillStore store(rows);
    store.add({0, "gemm", "256x256x256", "avx512 t1", "kc 256->512", {{"kc", 512}}, 1.1, "e", "", 0,
               {{{{"kc", 512}}, 1.0}}});
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(rows.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE skills SET config = 'kc=;;'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string rows_before = slurp(rows);
  expect_one_line_error(run_process({TREX_BINARY, "aura", "skills", "--skills", rows}, limit(30)), "skill 1");
  expect_one_line_error(run_process({TREX_BINARY, "aura", "tune", "gemm", "--shape", "64x64x64", "--budget", "1",
                                     "--skills", rows},
                                    limit(60)),
                        "skill 1");
  EXPECT_EQ(slurp(rows), rows_before);
  // A real skill database cut short (a copy interrupted half-way).
  const std::string cut = d + "/cut.db";
  std::filesystem::remove(cut);
  {
    aura::SkillStore store(cut);
    for (int i = 0; i < 40; ++i) {
      aura::Skill k{0, "gemm", "256x256x256", "avx512 t1", "kc", {{"kc", 64 + 8 * i}}, 1.1, std::string(200, 'e'), "", 0, {}};
      for (int o = 0; o < 20; ++o) k.observations.push_back({{{"kc", 64 + 8 * o}}, 1.0 + o});
      store.add(k);
    }
  }
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  const std::string cut_before = slurp(cut);
  ProcessResult c = run_process({TREX_BINARY, "aura", "skills", "--skills", cut}, limit(30));
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
  EXPECT_NE(c.err.find(cut), std::string::npos) << c.err;
  EXPECT_EQ(std::count(c.err.begin(), c.err.end(), '\n'), 1) << c.err;
  EXPECT_EQ(slurp(cut), cut_before);
  // A corrupt tuning file through the environment: the first kernel lookup names it.
  const std::string bad_toml = d + "/env_bad.toml";
  { std::ofstream(bad_toml) << "[[kernel]]\nname = \"swiglu.fwd\"\nshape = \"*\"\nstream = 9\n"; }
  expect_one_line_error(run_process({"/usr/bin/env", "TREX_TUNING=" + bad_toml, TREX_BINARY, "kernels", "check",
                                     "--kernel", "swiglu.fwd", "--seeds", "1"},
                                    limit(60)),
                        "env_bad.toml:4");
}

// Without a verified gain the entry says "built-in" (every parameter 0), so it follows the
// kernels' own defaults instead of pinning today's values.
TEST(AuraCommand, TuneWithoutAGainWritesTheBuiltInAsZeros) {
  const std::string d = dir(), out = d + "/zeros.toml";
  std::filesystem::remove(out);
  ProcessResult p = run_process({TREX_BINARY, "aura", "tune", "mhc.head_fwd", "--shape", "64x4x64", "--budget", "2",
                                 "--threads", "1", "--min-time", "0.002", "--min-gain", "0.45", "--no-skills",
                                 "--out", out, "--json"},
                                limit(120));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  kernels::Tuning t = kernels::Tuning::load(out);
  const kernels::ParamMap* e = t.find("mhc.head_fwd", kernels::shape_class({64, 4, 64}));
  ASSERT_NE(e, nullptr);
  if (j["best"]["improved"].get<bool>()) {  // a 45% gain (possible only by noise): the best config
    for (const auto& [name, v] : *e) EXPECT_EQ(v, j["best"]["config"][name].get<int64_t>()) << name;
  } else {
    ASSERT_FALSE(e->empty());
    for (const auto& [name, v] : *e) EXPECT_EQ(v, 0) << name;
  }
}

// --verify through the binary: when the search ends on a gain, the built-in and the best are
// measured again (here once each) and the JSON's `verification` decides what is written: the
// best and a skill (with the verified gain, and the built-in's observation at that ratio) when it
// held, the built-in's zeros and no skill when it did not. --min-gain 0 on a tiny space whose
// configurations time alike, so either outcome occurs; each is checked as it comes.
TEST(AuraCommand, TuneWritesOnlyAVerifiedGain) {
  const std::string d = dir(), out = d + "/verify.toml", db = d + "/verify.db";
  std::filesystem::remove(out);
  std::filesystem::remove(db);
  ProcessResult p = run_process({TREX_BINARY, "aura", "tune", "mhc.head_fwd", "--shape", "64x4x64", "--budget", "4",
                                 "--threads", "1", "--min-time", "0.002", "--min-gain", "0", "--verify", "1",
                                 "--out", out, "--skills", db, "--json"},
                                limit(120));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  nlohmann::json j = nlohmann::json::parse(p.out);
  const bool search_gain = j["best"]["config"] != j["builtin"]["config"] && j["best"]["gain"].get<double>() >= 1;
  ASSERT_EQ(j.contains("verification"), search_gain) << j.dump();
  const bool improved = j["best"]["improved"].get<bool>();
  if (search_gain) {
    const nlohmann::json& v = j["verification"];
    EXPECT_EQ(v["rounds"].get<int>(), 1);
    EXPECT_EQ(v["measurements"].get<int>(), 2) << v.dump();  // both passed the gate
    const double b = v["builtin_s"].get<double>(), c = v["best_s"].get<double>();
    EXPECT_GT(b, 0);
    EXPECT_GT(c, 0);
    EXPECT_NEAR(v["gain"].get<double>(), b / c, 1e-9 * b / c);
    EXPECT_EQ(v["verified"].get<bool>(), b / c >= 1);
    EXPECT_EQ(improved, v["verified"].get<bool>());
    EXPECT_EQ(v["message"].get<std::string>().empty(), improved) << v.dump();
  } else {
    EXPECT_FALSE(improved);
  }
  kernels::Tuning t = kernels::Tuning::load(out);
  const kernels::ParamMap* e = t.find("mhc.head_fwd", kernels::shape_class({64, 4, 64}));
  ASSERT_NE(e, nullptr);
  ASSERT_FALSE(e->empty());
  for (const auto& [name, value] : *e)
    EXPECT_EQ(value, improved ? j["best"]["config"][name].get<int64_t>() : 0) << name << " " << j.dump();
  EXPECT_EQ(j["skill_recorded"].get<int64_t>() > 0, improved);
  if (!improved) return;  // the built-in's zeros above, and no skill
  aura::SkillStore store(db, true);
  std::vector<aura::Skill> skills = store.all("mhc.head_fwd");
  ASSERT_EQ(skills.size(), 1u);
  const aura::Skill& k = skills[0];
  EXPECT_NEAR(k.gain, j["verification"]["gain"].get<double>(), 1e-9);
  // The built-in's observation is the best's times the verified gain, not the search's profile.
  const aura::Config builtin = j["builtin"]["config"].get<aura::Config>();
  const aura::Config best = j["best"]["config"].get<aura::Config>();
  double rb = -1, rbest = -1;
  for (const aura::Observation& o : k.observations) {
    if (o.config == builtin) rb = o.relative;
    if (o.config == best) rbest = o.relative;
  }
  ASSERT_GT(rb, 0);
  ASSERT_GT(rbest, 0);
  EXPECT_NEAR(rb / rbest, k.gain, 1e-6 * k.gain);
}

}  // namespace
}  // namespace trex
