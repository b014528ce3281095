// The skill database (see skills.h).
#include "trex/aura/skills.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "trex/util/error.h"

namespace trex::aura {

namespace {

constexpr int kSchemaVersion = 2;

const char* kCreate =
    "CREATE TABLE skills (id INTEGER PRIMARY KEY, kernel TEXT NOT NULL, shape TEXT NOT NULL, "
    "hardware TEXT NOT NULL, change TEXT NOT NULL, config TEXT NOT NULL, gain REAL NOT NULL, "
    "evidence TEXT NOT NULL, created TEXT NOT NULL)";
const char* kCreateObservations =
    "CREATE TABLE observations (skill_id INTEGER NOT NULL REFERENCES skills(id), config TEXT NOT NULL, "
    "relative REAL NOT NULL)";

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string col(sqlite3_stmt* st, int i) {
  const unsigned char* p = sqlite3_column_text(st, i);
  return p ? reinterpret_cast<const char*>(p) : "";
}

}  // namespace

std::string config_text(const Config& c) {
  std::string s;
  for (const auto& [n, v] : c) s += (s.empty() ? "" : ";") + n + "=" + std::to_string(v);
  return s;
}

Config parse_config_text(const std::string& s) {
  Config c;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ';')) {
    size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 >= part.size())
      throw InputError("malformed configuration '" + s + "'");
    try {
      size_t used = 0;
      int64_t v = std::stoll(part.substr(eq + 1), &used);
      if (used != part.size() - eq - 1) throw std::invalid_argument("trailing");
      c[part.substr(0, eq)] = v;
    } catch (const std::exception&) {
      throw InputError("malformed configuration '" + s + "'");
    }
  }
  return c;
}

double shape_distance(const std::string& a, const std::string& b) {
  std::vector<int> x = kernels::shape_buckets(a), y = kernels::shape_buckets(b);
  if (x.size() != y.size() || x.empty()) return 1e6;
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d += std::abs(x[i] - y[i]);
  return d;
}

SkillStore::SkillStore(const std::string& path, bool read_only) : path_(path) {
  const bool existed = std::filesystem::exists(path);
  if (read_only && !existed) throw InputError(path, 0, "no such skill database");
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "cannot open";
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, 0, "cannot open the skill database: " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
  auto fail = [&](const std::string& why) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, 0, "not a trex skill database (" + why + ")");
  };
  // Reading the version reads the header: a file that is not SQLite fails here, untouched.
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &st, nullptr) != SQLITE_OK) fail(sqlite3_errmsg(db_));
  int version = 0;
  if (sqlite3_step(st) == SQLITE_ROW) version = sqlite3_column_int(st, 0);
  else {
    std::string e = sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    fail(e);
  }
  sqlite3_finalize(st);
  int tables = 0;
  if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_master", -1, &st, nullptr) != SQLITE_OK)
    fail(sqlite3_errmsg(db_));
  if (sqlite3_step(st) == SQLITE_ROW) tables = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (version == 0 && tables == 0) {
    if (read_only) fail("empty");
    std::string sql = std::string(kCreate) + "; " + kCreateObservations + "; PRAGMA user_version = " +
                      std::to_string(kSchemaVersion);
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string e = err ? err : "?";
      sqlite3_free(err);
      fail(e);
    }
    version_ = kSchemaVersion;
    return;
  }
  if (version != 1 && version != kSchemaVersion)
    fail("schema version " + std::to_string(version) + ", expected 1 or 2");
  version_ = version;
  // The columns must be there.
  if (sqlite3_prepare_v2(db_, "SELECT id, kernel, shape, hardware, change, config, gain, evidence, created FROM skills LIMIT 0",
                         -1, &st, nullptr) != SQLITE_OK)
    fail(sqlite3_errmsg(db_));
  sqlite3_finalize(st);
  if (version_ >= 2) {
    if (sqlite3_prepare_v2(db_, "SELECT skill_id, config, relative FROM observations LIMIT 0", -1, &st, nullptr) != SQLITE_OK)
      fail(sqlite3_errmsg(db_));
    sqlite3_finalize(st);
  }
  (void)existed;
}

void SkillStore::exec(const std::string& sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string e = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw InputError(path_, 0, "cannot " + what + ": " + e);
  }
}

SkillStore::~SkillStore() {
  if (db_) sqlite3_close(db_);
}

int64_t SkillStore::add(const Skill& s) {
  // One transaction: the skill, its observations and (for a version-1 file) the upgrade.
  exec("BEGIN IMMEDIATE", "write a skill");
  if (version_ < 2) exec(std::string(kCreateObservations) + "; PRAGMA user_version = 2", "upgrade the skill database");
  sqlite3_stmt* st = nullptr;
  const char* sql =
      "INSERT INTO skills (kernel, shape, hardware, change, config, gain, evidence, created) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
  auto failed = [&](sqlite3_stmt* stmt) {
    std::string e = sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return InputError(path_, 0, "cannot write a skill: " + e);
  };
  if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) throw failed(st);
  std::string cfg = config_text(s.config), created = s.created.empty() ? now_utc() : s.created;
  sqlite3_bind_text(st, 1, s.kernel.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, s.shape.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, s.hardware.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, s.change.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 5, cfg.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 6, s.gain);
  sqlite3_bind_text(st, 7, s.evidence.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 8, created.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) != SQLITE_DONE) throw failed(st);
  sqlite3_finalize(st);
  const int64_t id = sqlite3_last_insert_rowid(db_);
  if (sqlite3_prepare_v2(db_, "INSERT INTO observations (skill_id, config, relative) VALUES (?, ?, ?)", -1, &st,
                         nullptr) != SQLITE_OK)
    throw failed(st);
  for (const Observation& o : s.observations) {
    std::string c = config_text(o.config);
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, c.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, o.relative);
    if (sqlite3_step(st) != SQLITE_DONE) throw failed(st);
  }
  sqlite3_finalize(st);
  exec("COMMIT", "write a skill");
  version_ = 2;
  return id;
}

std::vector<Skill> SkillStore::all(const std::string& kernel) const {
  sqlite3_stmt* st = nullptr;
  std::string sql = "SELECT id, kernel, shape, hardware, change, config, gain, evidence, created FROM skills";
  if (!kernel.empty()) sql += " WHERE kernel = ?";
  sql += " ORDER BY id";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    throw InputError(path_, 0, std::string("cannot read skills: ") + sqlite3_errmsg(db_));
  if (!kernel.empty()) sqlite3_bind_text(st, 1, kernel.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<Skill> out;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    Skill s;
    s.id = sqlite3_column_int64(st, 0);
    s.kernel = col(st, 1);
    s.shape = col(st, 2);
    s.hardware = col(st, 3);
    s.change = col(st, 4);
    try {
      s.config = parse_config_text(col(st, 5));
    } catch (const InputError& e) {
      sqlite3_finalize(st);
      throw InputError(path_, 0, "skill " + std::to_string(s.id) + ": " + e.what());
    }
    s.gain = sqlite3_column_double(st, 6);
    s.evidence = col(st, 7);
    s.created = col(st, 8);
    out.push_back(std::move(s));
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) throw InputError(path_, 0, std::string("cannot read skills: ") + sqlite3_errmsg(db_));
  if (version_ < 2) return out;
  for (Skill& s : out) {
    if (sqlite3_prepare_v2(db_, "SELECT config, relative FROM observations WHERE skill_id = ? ORDER BY rowid", -1, &st,
                           nullptr) != SQLITE_OK)
      throw InputError(path_, 0, std::string("cannot read observations: ") + sqlite3_errmsg(db_));
    sqlite3_bind_int64(st, 1, s.id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      try {
        s.observations.push_back({parse_config_text(col(st, 0)), sqlite3_column_double(st, 1)});
      } catch (const InputError& e) {
        sqlite3_finalize(st);
        throw InputError(path_, 0, "skill " + std::to_string(s.id) + " observation: " + e.what());
      }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) throw InputError(path_, 0, std::string("cannot read observations: ") + sqlite3_errmsg(db_));
  }
  return out;
}

std::vector<Skill> SkillStore::nearest(const std::string& kernel, const std::string& shape,
                                       const std::string& hardware, size_t n) const {
  std::vector<Skill> v = all(kernel);
  for (Skill& s : v) s.distance = shape_distance(s.shape, shape) + (s.hardware == hardware ? 0 : 4);
  std::stable_sort(v.begin(), v.end(), [](const Skill& a, const Skill& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.gain > b.gain;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

}  // namespace trex::aura
