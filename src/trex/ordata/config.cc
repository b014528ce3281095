#include "trex/ordata/config.h"

#include <cmath>
#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "toml++/toml.h"
#include "trex/ordata/family_util.h"
#include "trex/util/error.h"

namespace trex::ordata {

namespace {

// Mode shares a family's own [families.X.modes] table set explicitly (NaN = not set).
constexpr double kUnset = -1;

struct TomlFile {
  std::string path;
  [[noreturn]] void fail(const toml::node& n, const std::string& key, const std::string& msg) const {
    throw InputError(path, long(n.source().begin.line), key + ": " + msg);
  }
  double number(const toml::node& n, const std::string& key) const {
    if (auto v = n.value<double>()) return *v;
    fail(n, key, "expected a number");
  }
};

}  // namespace

CorpusConfig default_config() {
  CorpusConfig c;
  for (const Family* f : all_families()) {
    FamilyMix m;
    m.family = f;
    m.ranges = default_ranges(f->contract());
    m.mode_share[0] = m.mode_share[1] = m.mode_share[2] = kUnset;
    c.families.push_back(m);
  }
  return c;
}

CorpusConfig load_config(const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw InputError(path, long(e.source().begin.line), std::string(e.description()));
  }
  TomlFile file{path};
  CorpusConfig c = default_config();
  c.source = path;
  for (auto&& [k, node] : root) {
    std::string key(k.str());
    if (key != "run" && key != "families") file.fail(node, key, "unknown section (run, families)");
  }
  if (auto* run = root["run"].as_table()) {
    for (auto&& [k, node] : *run) {
      std::string key = "run." + std::string(k.str());
      if (k == "sft_view") {
        const std::optional<std::string> v = node.value<std::string>();
        if (!v || (*v != "full" && *v != "program")) file.fail(node, key, "must be \"full\" or \"program\"");
        c.sft_view = *v == "program" ? CorpusConfig::kSftProgram : CorpusConfig::kSftFull;
        continue;
      }
      if (k == "program_style") {
        const std::optional<std::string> v = node.value<std::string>();
        if (!v || (*v != "plain" && *v != "statement-data")) file.fail(node, key, "must be \"plain\" or \"statement-data\"");
        c.program_style = *v == "statement-data" ? CorpusConfig::kProgramStatementData : CorpusConfig::kProgramPlain;
        continue;
      }
      double v = file.number(node, key);
      auto share = [&](double& dst) {
        if (v < 0 || v > 1) file.fail(node, key, "must be in [0, 1]");
        dst = v;
      };
      if (k == "seed") {
        if (v < 0 || v != std::floor(v)) file.fail(node, key, "must be a whole number >= 0");
        c.seed = uint64_t(v);
      } else if (k == "count") {
        if (v < 1 || v != std::floor(v)) file.fail(node, key, "must be a whole number >= 1");
        c.count = long(v);
      } else if (k == "concise_share") share(c.concise_share);
      else if (k == "infeasible_share") share(c.infeasible_share);
      else if (k == "unbounded_share") share(c.unbounded_share);
      else if (k == "near_duplicate_threshold") share(c.near_threshold);
      else if (k == "block_size") {
        if (v < 1 || v > 100000 || v != std::floor(v)) file.fail(node, key, "must be a whole number in [1, 100000]");
        c.block_size = int(v);
      } else if (k == "solve_time_limit") {
        if (v <= 0) file.fail(node, key, "must be > 0 seconds");
        c.solve_time_limit = v;
      } else file.fail(node, key, "unknown key");
    }
  }
  if (auto* fams = root["families"].as_table()) {
    std::vector<FamilyMix> chosen;
    for (auto&& [k, node] : *fams) {
      std::string name(k.str()), where = "families." + name;
      const Family* f = find_family(name);
      if (!f) file.fail(node, where, "unknown family (see `trex data families`)");
      FamilyMix m;
      m.family = f;
      m.ranges = default_ranges(f->contract());
      m.mode_share[0] = m.mode_share[1] = m.mode_share[2] = kUnset;
      auto* t = node.as_table();
      if (!t) file.fail(node, where, "expected a table");
      for (auto&& [fk, fnode] : *t) {
        std::string fkey = where + "." + std::string(fk.str());
        if (fk == "weight") {
          m.weight = file.number(fnode, fkey);
          if (m.weight < 0) file.fail(fnode, fkey, "must be >= 0");
        } else if (fk == "params") {
          auto* pt = fnode.as_table();
          if (!pt) file.fail(fnode, fkey, "expected a table of [lo, hi] ranges");
          ParamRanges over;
          for (auto&& [pk, pnode] : *pt) {
            std::string pkey = fkey + "." + std::string(pk.str());
            auto* arr = pnode.as_array();
            if (!arr || arr->size() != 2) file.fail(pnode, pkey, "expected [lo, hi]");
            over[std::string(pk.str())] = {file.number(*arr->get(0), pkey), file.number(*arr->get(1), pkey)};
            try {
              ParamRanges one{{std::string(pk.str()), over[std::string(pk.str())]}};
              apply_overrides(f->contract(), one, fkey, m.ranges);
            } catch (const InputError& e) {
              throw InputError(path, long(pnode.source().begin.line), e.what());
            }
          }
        } else if (fk == "modes") {
          auto* mt = fnode.as_table();
          if (!mt) file.fail(fnode, fkey, "expected a table of shares, e.g. { infeasible = 1.0 }");
          m.mode_share[0] = m.mode_share[1] = m.mode_share[2] = 0;
          for (auto&& [mk, mnode] : *mt) {
            std::string mkey = fkey + "." + std::string(mk.str());
            FeasibilityMode mode = feasibility_mode_from(std::string(mk.str()), mkey);
            double v = file.number(mnode, mkey);
            if (v < 0) file.fail(mnode, mkey, "must be >= 0");
            if (v > 0 && !f->contract().supports(mode))
              file.fail(mnode, mkey, name + " cannot produce " + to_string(mode) + " instances (its contract allows " +
                                         [&] {
                                           std::vector<std::string> v2;
                                           for (auto x : f->contract().modes) v2.push_back(to_string(x));
                                           return join_and(v2);
                                         }() + ")");
            m.mode_share[int(mode)] = v;
          }
          if (m.mode_share[0] + m.mode_share[1] + m.mode_share[2] <= 0) file.fail(fnode, fkey, "the shares sum to 0");
        } else {
          file.fail(fnode, fkey, "unknown key (weight, params, modes)");
        }
      }
      chosen.push_back(m);
    }
    c.families = chosen;
  }
  return c;
}

void select_families(CorpusConfig& config, const std::string& names) {
  std::vector<FamilyMix> chosen;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    std::string name = names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty()) {
      const Family* f = find_family(name);
      if (!f) throw InputError::field("--families", "unknown family '" + name + "' (see `trex data families`)");
      bool found = false;
      for (const FamilyMix& m : config.families)
        if (m.family == f) chosen.push_back(m), found = true;
      if (!found) {
        FamilyMix m;
        m.family = f;
        m.ranges = default_ranges(f->contract());
        m.mode_share[0] = m.mode_share[1] = m.mode_share[2] = kUnset;
        chosen.push_back(m);
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (chosen.empty()) throw InputError::field("--families", "no family named");
  config.families = chosen;
}

void finalize_config(CorpusConfig& config) {
  double total = 0;
  for (FamilyMix& m : config.families) {
    total += m.weight;
    if (m.mode_share[0] == kUnset) {
      const Contract& c = m.family->contract();
      m.mode_share[1] = c.supports(FeasibilityMode::kInfeasible) ? config.infeasible_share : 0;
      m.mode_share[2] = c.supports(FeasibilityMode::kUnbounded) ? config.unbounded_share : 0;
      m.mode_share[0] = std::max(0.0, 1 - m.mode_share[1] - m.mode_share[2]);
      if (m.mode_share[0] + m.mode_share[1] + m.mode_share[2] <= 0)
        throw InputError::field("families." + c.family, "the feasibility shares leave nothing to generate");
    }
  }
  if (config.families.empty() || total <= 0) throw InputError::field("families", "no family with a positive weight");
  if (config.count < 1) throw InputError::field("--count", "must be >= 1");
}

std::string config_fingerprint(const CorpusConfig& c) {
  nlohmann::ordered_json j;
  j["seed"] = c.seed;
  j["count"] = c.count;
  j["concise_share"] = c.concise_share;
  j["near_threshold"] = c.near_threshold;
  j["block_size"] = c.block_size;
  j["solve_time_limit"] = c.solve_time_limit;
  // Only when not the default, so the fingerprints of the runs made before the option stay valid.
  if (c.sft_view != CorpusConfig::kSftFull) j["sft_view"] = "program";
  if (c.program_style != CorpusConfig::kProgramPlain) j["program_style"] = "statement-data";
  nlohmann::ordered_json fams = nlohmann::ordered_json::array();
  for (const FamilyMix& m : c.families) {
    nlohmann::ordered_json f;
    f["family"] = m.family->contract().family;
    f["version"] = m.family->contract().version;
    f["weight"] = m.weight;
    f["modes"] = {m.mode_share[0], m.mode_share[1], m.mode_share[2]};
    nlohmann::ordered_json r = nlohmann::ordered_json::object();
    for (const auto& [k, v] : m.ranges) r[k] = {v.first, v.second};
    f["params"] = r;
    fams.push_back(f);
  }
  j["families"] = fams;
  return j.dump();
}

}  // namespace trex::ordata
