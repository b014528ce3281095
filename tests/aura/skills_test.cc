// The skill database: written and read back, nearest skills by shape and hardware, and a
// corrupt or foreign file refused with its name and left unchanged.
#include "trex/aura/skills.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trex/util/error.h"

namespace trex::aura {
namespace {

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("trex_aura_skills_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto p = dir / name;
  std::filesystem::remove(p);
  return p.string();
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Skills, StoresAndRetrievesTheNearest) {
  std::string db = temp_path("s.db");
  {
    SkillStore s(db);
    s.add({0, "gemm", "512x512x512", "avx2 t2", "kc 256->384", {{"kc", 384}, {"mc", 96}}, 1.10, "e1", "", 0, {}});
    s.add({0, "gemm", "4096x4096x4096", "avx2 t2", "mc 96->48", {{"kc", 256}, {"mc", 48}}, 1.20, "e2", "", 0, {}});
    s.add({0, "gemm", "1024x1024x1024", "avx512 t2", "nc 4096->1024", {{"nc", 1024}}, 1.50, "e3", "", 0, {}});
    s.add({0, "swiglu.fwd", "4096x4096", "avx2 t2", "stream 1->2", {{"stream", 2}}, 1.3, "e4", "", 0, {}});
  }
  SkillStore s(db, true);
  EXPECT_EQ(s.all().size(), 4u);
  EXPECT_EQ(s.all("gemm").size(), 3u);
  std::vector<Skill> n = s.nearest("gemm", "1024x1024x1024", "avx2 t2", 2);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].shape, "512x512x512");  // distance 3, same hardware
  EXPECT_DOUBLE_EQ(n[0].distance, 3);
  EXPECT_EQ(n[0].config.at("kc"), 384);
  EXPECT_EQ(n[1].shape, "1024x1024x1024");  // distance 0 + 4 for other hardware
  EXPECT_FALSE(n[0].created.empty());
  EXPECT_EQ(s.nearest("rmsnorm.fwd", "4x4", "x", 3).size(), 0u);
}

TEST(Skills, CorruptOrForeignDatabasesAreRefusedUntouched) {
  std::string bad = temp_path("bad.db");
  {
    std::ofstream(bad) << "this is not a database, just text that happens to be long enough to read";
  }
  std::string before = slurp(bad);
  try {
    SkillStore s(bad);
    FAIL() << "opened a text file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos);
  }
  EXPECT_EQ(slurp(bad), before);

  std::string other = temp_path("other.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THROW(SkillStore s(other), InputError);
  EXPECT_THROW(SkillStore s(temp_path("absent.db"), true), InputError);
}

TEST(Skills, KeepObservationsAndReadAVersionOneDatabaseUntilItsNextSkill) {
  std::string db = temp_path("obs.db");
  {
    SkillStore s(db);
    Skill k{0, "gemm", "512x512x512", "avx512 t1", "kc 256->512", {{"kc", 512}}, 1.1, "e", "", 0,
            {{{{"kc", 512}}, 1.0}, {{{"kc", 256}}, 1.1}, {{{"kc", 64}}, 1.4}}};
    s.add(k);
    s.add({0, "gemm", "256x256x256", "avx512 t1", "same", {{"kc", 256}}, 1.0, "e", "", 0, {}});
  }
  SkillStore back(db, true);
  std::vector<Skill> all = back.all("gemm");
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(all[0].observations.size(), 3u);
  EXPECT_EQ(all[0].observations[2].config.at("kc"), 64);
  EXPECT_DOUBLE_EQ(all[0].observations[2].relative, 1.4);
  EXPECT_TRUE(all[1].observations.empty());

  // A database written by the previous schema: read as it is (opening changes nothing), then
  // upgraded in the transaction that adds a skill.
  std::string v1 = temp_path("v1.db");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(v1.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "CREATE TABLE skills (id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, shape TEXT NOT NULL, "
                         "hardware TEXT NOT NULL, change TEXT NOT NULL, config TEXT NOT NULL, gain REAL NOT NULL, "
                         "evidence TEXT NOT NULL, created TEXT NOT NULL); PRAGMA user_version = 1; "
                         "INSERT INTO skills VALUES (1, 'gemm', '512x512x512', 'x', 'kc 256->384', 'kc=384', 1.2, "
                         "'e', '2026-12-01T00:00:00Z')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  const std::string before = slurp(v1);
  {
    SkillStore s(v1);
    ASSERT_EQ(s.all().size(), 1u);
    EXPECT_TRUE(s.all()[0].observations.empty());
  }
  EXPECT_EQ(slurp(v1), before);
  {
    SkillStore s(v1);
    s.add({0, "gemm", "256x256x256", "x", "same", {{"kc", 256}}, 1.0, "e", "", 0, {{{{"kc", 256}}, 1.0}}});
  }
  SkillStore upgraded(v1, true);
  std::vector<Skill> u = upgraded.all();
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].config.at("kc"), 384);
  ASSERT_EQ(u[1].observations.size(), 1u);
}

TEST(Skills, ConfigText) {
  EXPECT_EQ(config_text({{"kc", 384}, {"mc", 96}}), "kc=384;mc=96");
  EXPECT_EQ(parse_config_text("kc=384;mc=96").at("mc"), 96);
  EXPECT_THROW(parse_config_text("kc=;mc"), InputError);
  EXPECT_THROW(parse_config_text("kc=3x"), InputError);
}

}  // namespace
}  // namespace trex::aura
