// Skills: each verified gain of a search, kept in an SQLite database so later searches start
// from what worked elsewhere.
//
// Table `skills` (schema version 2 in `PRAGMA user_version`):
//   id INTEGER PRIMARY KEY, kernel TEXT, shape TEXT (shape class), hardware TEXT
//   (AuraHardware::features()), change TEXT ("kc 256->384, mc 504->96", against the built-in),
//   config TEXT (the whole configuration, "kc=384;mc=96;..."), gain REAL (built-in time / tuned
//   time), evidence TEXT (times, runs, gate), created TEXT (UTC).
// Table `observations` (version 2): skill_id, config TEXT, relative REAL: every configuration
// the skill's search measured and passed, as its time over the search's best (prior.h learns the
// order and pruning rules of later searches from them). A version-1 database (no observations)
// is read as it is and upgraded, in the transaction that adds its next skill.
// Retrieval: skills of the same kernel, nearest first by the distance between shape classes
// (sum over dimensions of |log2 a - log2 b|) plus 4 when the hardware differs; ties by gain.
#pragma once

#include <string>
#include <vector>

#include "trex/aura/target.h"

struct sqlite3;

namespace trex::aura {

struct Observation {
  Config config;
  double relative = 1;  // time / the best time of that skill's search
};

struct Skill {
  int64_t id = 0;
  std::string kernel, shape, hardware, change;
  Config config;
  double gain = 0;
  std::string evidence, created;
  double distance = 0;  // filled by nearest()
  std::vector<Observation> observations;
};

class SkillStore {
 public:
  // Opens (creating when absent, unless read_only) the database. Throws InputError naming the
  // file when it is not an SQLite database, has another schema, or cannot be opened; an existing
  // file is never modified by opening it.
  explicit SkillStore(const std::string& path, bool read_only = false);
  ~SkillStore();
  SkillStore(const SkillStore&) = delete;
  SkillStore& operator=(const SkillStore&) = delete;

  int64_t add(const Skill& s);  // returns the id
  std::vector<Skill> all(const std::string& kernel = "") const;
  std::vector<Skill> nearest(const std::string& kernel, const std::string& shape,
                             const std::string& hardware, size_t n) const;

 private:
  void exec(const std::string& sql, const std::string& what);
  std::string path_;
  sqlite3* db_ = nullptr;
  int version_ = 0;
};

std::string config_text(const Config& c);   // "kc=384;mc=96"
Config parse_config_text(const std::string& s);  // throws InputError on a malformed one
// The skill-guided search inputs: the nearest skills' configurations (mapped into the target's
// space) and the directions of their changes.
double shape_distance(const std::string& a, const std::string& b);

}  // namespace trex::aura
