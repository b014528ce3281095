// Copy documents for the recipe's pre-training mixture; what and why in copy_docs.h.
#include "trex/recipe/copy_docs.h"

#include <cctype>
#include <map>
#include <vector>

#include "trex/ordata/rng.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::recipe {

namespace {

using nlohmann::json;

const std::vector<std::string> kItems = {
    "silica sand", "soda ash",  "shirt",     "blouse",     "corn",      "oats",      "barley",    "wheat",
    "steel",       "copper",    "truck",     "van",        "ship",      "barge",     "plant one", "plant two",
    "north mill",  "south mill", "bond a",   "bond b",     "bond c",    "radio",     "tv",        "print",
    "web",         "crate",     "pallet",    "drum",       "tank",      "gas unit",  "coal unit", "hydro unit",
    "wind farm",   "table",     "chair",     "desk",       "lamp",      "bread",     "cake",      "pie",
    "soap",        "oil",       "resin",     "paint",      "glue",      "cable",     "pipe",      "valve",
    "pump",        "motor"};
const std::vector<std::string> kAttributes = {
    "price",        "cost",      "profit",  "weight",      "volume",       "capacity",    "demand",
    "supply",       "limit",     "available", "cutting time", "sewing time", "labor",      "machine time",
    "protein",      "fat",       "fiber",   "iron",        "yield",        "return",      "risk",
    "audience",     "budget share", "minimum", "maximum",  "fixed cost",   "ramp",        "emission"};
const std::vector<std::string> kCompanies = {"Clearview", "Threadline", "Northwind",  "Bluepeak",
                                             "Redstone",  "Greenfield", "Silverlake", "Ironbridge"};
const std::vector<std::string> kScalars = {"hours of cutting time", "hours of labor",   "kg of capacity",
                                           "dollars of budget",     "units of demand",  "tons of supply"};

// A number as the OR corpus writes one: 1-4 digit integers, or (3 in 10) a decimal with up to
// two places such as 0.93 or 4.5.
std::string number(ordata::Rng& r) {
  if (r.chance(0.3)) {
    const long cents = r.integer(1, 999);
    std::string s = std::to_string(cents / 100) + "." + char('0' + cents / 10 % 10) + char('0' + cents % 10);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
  }
  const long digits = r.integer(1, 4);
  long lo = 1;
  for (long i = 1; i < digits; ++i) lo *= 10;
  return std::to_string(r.integer(digits == 1 ? 1 : lo, lo * 10 - 1));
}

// "silica sand" -> "silica_sand" (a program's key).
std::string key_of(std::string s) {
  for (char& c : s)
    if (c == ' ') c = '_';
  return s;
}

std::string capitalized(std::string s) {
  s[0] = char(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// k distinct elements of v in a random order.
std::vector<std::string> sample(ordata::Rng& r, const std::vector<std::string>& v, long k) {
  std::vector<std::string> all = v;
  r.shuffle(all);
  all.resize(size_t(k));
  return all;
}

json conversation(const std::string& user, const std::string& assistant) {
  return {{"messages", json::array({{{"role", "user"}, {"content", user}}, {{"role", "assistant"}, {"content", assistant}}})}};
}

// The probe's task: twelve numbers repeated in order.
json in_order_document(ordata::Rng& r) {
  std::string list;
  for (int i = 0; i < 12; ++i) list += (i ? " " : "") + number(r);
  return conversation("Numbers: " + list + "\nRepeat them.", list);
}

// The keyed-in-order statement: the same three layouts written attribute by attribute.
std::string attribute_major_body(long layout, const std::vector<std::string>& items, const std::vector<std::string>& attrs,
                                 const std::map<std::pair<std::string, std::string>, std::string>& value) {
  std::string body;
  switch (layout) {
    case 0: {  // the per-item table turned round: "Data per attribute (Attribute: x; y): a 1/3; b 2/4."
      body = "Data per attribute (Attribute: ";
      for (size_t n = 0; n < items.size(); ++n) body += (n ? "; " : "") + items[n];
      body += "): ";
      for (size_t k = 0; k < attrs.size(); ++k) {
        body += (k ? "; " : "") + attrs[k] + " ";
        for (size_t n = 0; n < items.size(); ++n) body += (n ? "/" : "") + value.at({items[n], attrs[k]});
      }
      body += ".";
      break;
    }
    case 1:  // "A: x 1, y 3."
      for (size_t k = 0; k < attrs.size(); ++k) {
        body += (k ? " " : "") + capitalized(attrs[k]) + ": ";
        for (size_t n = 0; n < items.size(); ++n) body += (n ? ", " : "") + items[n] + " " + value.at({items[n], attrs[k]});
        body += ".";
      }
      break;
    default:  // "The a of x is 1.", attribute by attribute
      for (const std::string& a : attrs)
        for (const std::string& i : items) body += (body.empty() ? "" : " ") + ("The " + a + " of " + i + " is " + value.at({i, a}) + ".");
  }
  return body;
}

// A keyed document. `ordered` (style keyed-in-order, a curriculum's step between the in-order
// lists and the shuffled keyed documents): the statement is written attribute by attribute and
// the answer keeps the statement's order, so the answer's item x attribute numbers are the
// statement's numbers in the order they appear, with keys between them: the in-order copy skill
// reaches it, and it still teaches the answer's key/value layout. Without it (the keyed style,
// and the mixed stream's keyed documents) the statement is item by item and the answer attribute
// by attribute with the items shuffled: each number must be found by item and attribute. The
// unordered path draws exactly what it drew before the ordered one existed (the digest test).
json keyed_document(ordata::Rng& r, bool ordered = false) {
  const std::vector<std::string> items = sample(r, kItems, r.integer(2, 4));
  const std::vector<std::string> attrs = sample(r, kAttributes, r.integer(2, 4));
  std::map<std::pair<std::string, std::string>, std::string> value;
  for (const std::string& i : items)
    for (const std::string& a : attrs) value[{i, a}] = number(r);
  std::vector<std::pair<std::string, std::string>> scalars;
  for (const std::string& s : sample(r, kScalars, r.integer(0, 2))) scalars.push_back({s, number(r)});

  std::string body;
  const long layout = r.integer(0, 2);
  if (ordered)
    body = attribute_major_body(layout, items, attrs, value);
  else
    switch (layout) {
      case 0: {  // the corpus's per-item table: "Data per item (Item: A; B): x 1/2; y 3/4."
        body = "Data per item (Item: ";
        for (size_t k = 0; k < attrs.size(); ++k) body += (k ? "; " : "") + capitalized(attrs[k]);
        body += "): ";
        for (size_t n = 0; n < items.size(); ++n) {
          body += (n ? "; " : "") + items[n] + " ";
          for (size_t k = 0; k < attrs.size(); ++k) body += (k ? "/" : "") + value[{items[n], attrs[k]}];
        }
        body += ".";
        break;
      }
      case 1:  // "X: a 1, b 2."
        for (size_t n = 0; n < items.size(); ++n) {
          body += (n ? " " : "") + capitalized(items[n]) + ": ";
          for (size_t k = 0; k < attrs.size(); ++k) body += (k ? ", " : "") + attrs[k] + " " + value[{items[n], attrs[k]}];
          body += ".";
        }
        break;
      default:  // "The a of x is 1."
        for (const std::string& i : items)
          for (const std::string& a : attrs) body += (body.empty() ? "" : " ") + ("The " + a + " of " + i + " is " + value[{i, a}] + ".");
    }
  std::string user = kCompanies[size_t(r.integer(0, long(kCompanies.size()) - 1))] + " plans with " +
                     std::to_string(items.size()) + " items.\n\n" + body;
  for (const auto& [s, v] : scalars) user += "\n* There are " + v + " " + s + ".";
  user += "\n\nWrite the data into a Python program.";

  std::string answer = "```python\n";
  for (const std::string& a : ordered ? attrs : sample(r, attrs, long(attrs.size()))) {
    const std::vector<std::string> order = ordered ? items : sample(r, items, long(items.size()));
    // A constraint needs a right-hand side the statement gives: only with a scalar line.
    if (scalars.empty() || r.chance(0.5)) {
      answer += key_of(a) + " = {";
      for (size_t n = 0; n < order.size(); ++n) answer += (n ? ", \"" : "\"") + key_of(order[n]) + "\": " + value[{order[n], a}];
      answer += "}\n";
    } else {
      answer += "m.addConstr(";
      for (size_t n = 0; n < order.size(); ++n)
        answer += (n ? " + " : "") + value[{order[n], a}] + " * x[\"" + key_of(order[n]) + "\"]";
      answer += " <= " + scalars[0].second + ", name=\"" + key_of(a) + "\")\n";
    }
  }
  for (const auto& [s, v] : scalars) answer += key_of(s.substr(s.find(" of ") + 4)) + " = " + v + "\n";
  return conversation(user, answer + "```\n");
}

}  // namespace

std::optional<CopyStyle> copy_style_named(const std::string& name) {
  if (name == "mixed") return CopyStyle::kMixed;
  if (name == "in-order") return CopyStyle::kInOrder;
  if (name == "keyed") return CopyStyle::kKeyed;
  if (name == "keyed-in-order") return CopyStyle::kKeyedInOrder;
  return std::nullopt;
}

json copy_document(uint64_t seed, uint64_t index, CopyStyle style) {
  ordata::Rng r(ordata::mix_key(seed, index, ordata::string_key("recipe-copy")));
  switch (style) {
    case CopyStyle::kInOrder:
      return in_order_document(r);
    case CopyStyle::kKeyed:
      return keyed_document(r);
    case CopyStyle::kKeyedInOrder:
      return keyed_document(r, true);
    case CopyStyle::kMixed:
      break;
  }
  return r.chance(1.0 / 3.0) ? in_order_document(r) : keyed_document(r);
}

void write_copy_documents(const std::string& path, long count, uint64_t seed, CopyStyle style) {
  if (count < 1) throw InputError::field("copy_docs", "must be >= 1 (got " + std::to_string(count) + ")");
  std::string out;
  for (long i = 0; i < count; ++i) out += copy_document(seed, uint64_t(i), style).dump() + "\n";
  write_file_atomic(path, out);
}

}  // namespace trex::recipe
