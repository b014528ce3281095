#include "trex/model/toml_fields.h"

#include <cmath>
#include <filesystem>

#include "trex/util/error.h"

namespace trex::model {

TomlFields::TomlFields(std::string file, const toml::table& table, std::string section)
    : file_(std::move(file)), table_(table), section_(std::move(section)) {}

toml::table TomlFields::parse_file(const std::string& path) {
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    if (!e.source().path)  // the file could not be opened
      throw InputError(path, 0, std::string(e.description()));
    throw InputError(path, long(where.line), std::string(e.description()));
  }
}

bool TomlFields::has(const std::string& key) const { return table_.get(key) != nullptr; }

const toml::node* TomlFields::take(const std::string& key) {
  known_.insert(key);
  return table_.get(key);
}

long TomlFields::line_of(const std::string& key) const {
  const toml::node* n = table_.get(key);
  if (n == nullptr) return long(table_.source().begin.line);
  return long(n->source().begin.line);
}

void TomlFields::fail(const std::string& key, const std::string& message) const {
  std::string name = section_.empty() ? key : section_ + "." + key;
  throw InputError(file_, line_of(key), name + ": " + message);
}

long TomlFields::integer(const std::string& key, long min) {
  const toml::node* n = take(key);
  if (n == nullptr) fail(key, "missing");
  const auto* i = n->as_integer();
  if (i == nullptr) fail(key, "must be a whole number");
  long v = long(i->get());
  if (v < min) fail(key, "must be at least " + std::to_string(min));
  return v;
}

long TomlFields::integer_or(const std::string& key, long fallback, long min) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return integer(key, min);
}

double TomlFields::number(const std::string& key, double min, double max) {
  const toml::node* n = take(key);
  if (n == nullptr) fail(key, "missing");
  double v = 0;
  if (const auto* i = n->as_integer())
    v = double(i->get());
  else if (const auto* f = n->as_floating_point())
    v = f->get();
  else
    fail(key, "must be a number");
  if (!std::isfinite(v)) fail(key, "must be finite");
  if (v < min || v > max) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "must be in [%g, %g], got %g", min, max, v);
    fail(key, buf);
  }
  return v;
}

double TomlFields::number_or(const std::string& key, double fallback, double min, double max) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return number(key, min, max);
}

std::string TomlFields::text(const std::string& key) {
  const toml::node* n = take(key);
  if (n == nullptr) fail(key, "missing");
  const auto* s = n->as_string();
  if (s == nullptr) fail(key, "must be a string");
  if (s->get().empty()) fail(key, "must not be empty");
  return s->get();
}

std::string TomlFields::text_or(const std::string& key, const std::string& fallback) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return text(key);
}

std::string TomlFields::choice(const std::string& key, const std::vector<std::string>& allowed) {
  std::string v = text(key);
  for (const std::string& a : allowed)
    if (v == a) return v;
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i)
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  fail(key, "is \"" + v + "\", expected " + list);
}

std::string TomlFields::choice_or(const std::string& key, const std::string& fallback,
                                  const std::vector<std::string>& allowed) {
  if (!has(key)) {
    known_.insert(key);
    return fallback;
  }
  return choice(key, allowed);
}

bool TomlFields::boolean_or(const std::string& key, bool fallback) {
  const toml::node* n = take(key);
  if (n == nullptr) return fallback;
  const auto* b = n->as_boolean();
  if (b == nullptr) fail(key, "must be true or false");
  return b->get();
}

std::vector<long> TomlFields::integers(const std::string& key, long min) {
  const toml::node* n = take(key);
  if (n == nullptr) fail(key, "missing");
  const toml::array* a = n->as_array();
  if (a == nullptr) fail(key, "must be an array of whole numbers");
  std::vector<long> out;
  for (const toml::node& e : *a) {
    const auto* i = e.as_integer();
    if (i == nullptr) fail(key, "must be an array of whole numbers");
    if (i->get() < min) fail(key, "entries must be at least " + std::to_string(min));
    out.push_back(long(i->get()));
  }
  return out;
}

const toml::table* TomlFields::table(const std::string& key) {
  const toml::node* n = take(key);
  if (n == nullptr) return nullptr;
  const toml::table* t = n->as_table();
  if (t == nullptr) fail(key, "must be a table");
  return t;
}

std::vector<const toml::table*> TomlFields::tables(const std::string& key) {
  std::vector<const toml::table*> out;
  const toml::node* n = take(key);
  if (n == nullptr) return out;
  const toml::array* a = n->as_array();
  if (a == nullptr) fail(key, "must be an array of tables ([[" + key + "]])");
  for (const toml::node& e : *a) {
    const toml::table* t = e.as_table();
    if (t == nullptr) fail(key, "must be an array of tables ([[" + key + "]])");
    out.push_back(t);
  }
  return out;
}

void TomlFields::allow(const std::vector<std::string>& keys) {
  for (const std::string& k : keys) known_.insert(k);
}

void TomlFields::finish() const {
  for (const auto& [k, v] : table_) {
    std::string key(k.str());
    if (!known_.count(key)) {
      std::string name = section_.empty() ? key : section_ + "." + key;
      throw InputError(file_, long(v.source().begin.line), name + ": unknown field");
    }
  }
}

std::string resolve_beside(const std::string& config_file, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(config_file).parent_path() / p).lexically_normal().string();
}

}  // namespace trex::model
