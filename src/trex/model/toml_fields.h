// Strict reading of one TOML table for trex's own config files (models, clusters, runs,
// strategies, scenarios). Internal to the parts that read TOML; headers that callers include
// never expose toml++.
//
// A TomlFields wraps one table. Each getter takes a key, returns its value or the default,
// and records that the key is known; finish() then refuses any key nobody asked for, so a
// misspelt field is an error rather than a silent default. Every error is an InputError of
// one line: "FILE:LINE: section.key: message".
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "toml++/toml.h"

namespace trex::model {

class TomlFields {
 public:
  // `table` must outlive this object. `section` prefixes field names in errors ("attention").
  TomlFields(std::string file, const toml::table& table, std::string section);

  // Parses a whole file; throws InputError when it cannot be read or is not TOML.
  static toml::table parse_file(const std::string& path);

  bool has(const std::string& key) const;
  // Whole numbers. `min` is the smallest accepted value.
  long integer(const std::string& key, long min);
  long integer_or(const std::string& key, long fallback, long min);
  // Finite numbers (integers accepted) in [min, max].
  double number(const std::string& key, double min, double max);
  double number_or(const std::string& key, double fallback, double min, double max);
  std::string text(const std::string& key);
  std::string text_or(const std::string& key, const std::string& fallback);
  // One of `allowed`.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::string choice_or(const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& allowed);
  bool boolean_or(const std::string& key, bool fallback);
  std::vector<long> integers(const std::string& key, long min);
  // A sub-table; nullptr when absent. The key counts as known.
  const toml::table* table(const std::string& key);
  // An array of tables ([[key]]); empty when absent.
  std::vector<const toml::table*> tables(const std::string& key);
  // Marks keys as known without reading them (e.g. provenance notes).
  void allow(const std::vector<std::string>& keys);

  // Throws for the first key that no getter asked for.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  const std::string& file() const { return file_; }
  const std::string& section() const { return section_; }

 private:
  const toml::node* take(const std::string& key);
  long line_of(const std::string& key) const;

  std::string file_;
  const toml::table& table_;
  std::string section_;
  std::set<std::string> known_;
};

// A file named inside config file `config_file`: absolute as given, otherwise relative to the
// folder that holds config_file (so scenarios can name their model, cluster and run files).
std::string resolve_beside(const std::string& config_file, const std::string& path);

}  // namespace trex::model
