#include "trex/ordata/lexicon.h"

#include <stdexcept>

#include "trex/ordata/family_util.h"

namespace trex::ordata {

namespace {

// Rotating the shared lists by the industry's position keeps each industry's names its own.
size_t offset_of(const Lexicon& lex) {
  const auto& all = lexicons();
  for (size_t i = 0; i < all.size(); ++i)
    if (&all[i] == &lex) return i * 5;
  return 0;
}

std::vector<std::string> rotate(const std::vector<std::string>& pool, size_t offset, int n) {
  if (n < 0 || size_t(n) > pool.size()) throw std::logic_error("lexicon: too many names asked for");
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(pool[(offset + size_t(i)) % pool.size()]);
  return out;
}

const std::vector<std::string>& towns() {
  static const std::vector<std::string> v = {"Ashford", "Brookton", "Carlow", "Dunmore", "Easton", "Fairview",
                                             "Glenwood", "Hartley", "Ivybridge", "Juniper", "Kingsley", "Lakeside",
                                             "Millbrook", "Northam", "Oakridge", "Pinecrest"};
  return v;
}

const std::vector<std::string>& people() {
  static const std::vector<std::string> v = {"Ada", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana",
                                             "Ivan", "Jonas", "Kira", "Luis", "Mira", "Nils", "Olga", "Priya"};
  return v;
}

const std::vector<std::string>& tags() {
  static const std::vector<std::string> v = {"Amber", "Birch", "Cobalt", "Delta", "Ember", "Falcon", "Granite",
                                             "Harbor", "Indigo", "Jade", "Kestrel", "Lumen", "Maple", "Nova",
                                             "Onyx", "Pioneer"};
  return v;
}

const char* const kOrdinals[] = {"first", "second", "third", "fourth", "fifth", "sixth",
                                 "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth"};

}  // namespace

const std::vector<Lexicon>& lexicons() {
  static const std::vector<Lexicon> v = {
      {"furniture manufacturing", "Oakline Furniture", "piece of furniture",
       {"dining chair", "coffee table", "bookshelf", "writing desk", "bed frame", "wardrobe", "bench", "cabinet"},
       "unit", "workshop", "showroom", "saw line", "carpenter", "week", "lumber", "board feet"},
      {"food processing", "Harvest Table Foods", "product",
       {"tomato soup", "pasta sauce", "bean stew", "chicken broth", "veggie chili", "corn chowder", "lentil curry", "pea soup"},
       "case", "cannery", "supermarket", "filling line", "line operator", "day", "produce", "kg"},
      {"pharmaceuticals", "Medora Pharma", "drug product",
       {"pain relief tablets", "cough syrup", "allergy capsules", "antacid", "vitamin pack", "eye drops", "burn gel", "flu powder"},
       "lot", "plant", "pharmacy chain", "granulator", "technician", "week", "active ingredient", "kg"},
      {"automotive parts", "Ridgeway Components", "part",
       {"brake disc", "axle shaft", "gear housing", "steering rack", "fuel pump", "radiator", "door hinge", "alternator"},
       "crate", "factory", "assembly plant", "press", "machinist", "week", "steel", "tonnes"},
      {"electronics assembly", "Voltix Devices", "device",
       {"router", "smart speaker", "tablet", "headset", "camera", "thermostat", "smartwatch", "game controller"},
       "unit", "assembly site", "retailer", "placement machine", "assembler", "week", "circuit boards", "boards"},
      {"textiles and apparel", "Threadworks Apparel", "garment",
       {"denim jacket", "wool coat", "linen shirt", "rain parka", "knit sweater", "cargo trousers", "summer dress", "fleece vest"},
       "bundle", "sewing mill", "boutique", "loom", "seamstress", "week", "fabric", "metres"},
      {"chemicals", "Clearwater Chemicals", "chemical",
       {"solvent blend", "cleaning concentrate", "adhesive", "coolant", "resin", "degreaser", "sealant", "lubricant"},
       "drum", "works", "distributor", "reactor", "process operator", "week", "feedstock", "tonnes"},
      {"paper and packaging", "Foldright Packaging", "packaging product",
       {"shipping box", "cereal carton", "paper bag", "egg tray", "mailer tube", "pizza box", "label roll", "gift box"},
       "pallet", "mill", "packer", "corrugator", "press operator", "day", "pulp", "tonnes"},
      {"craft brewing", "Riverbend Brewing", "beer",
       {"pale ale", "stout", "lager", "porter", "wheat beer", "pilsner", "amber ale", "saison"},
       "barrel", "brewery", "pub", "fermenter", "brewer", "month", "malt", "kg"},
      {"steel fabrication", "Ironbridge Steelworks", "steel product",
       {"I-beam", "rebar bundle", "steel plate", "pipe section", "angle bar", "channel", "wire coil", "sheet pile"},
       "tonne", "mill", "construction firm", "rolling stand", "steelworker", "week", "scrap steel", "tonnes"},
  };
  return v;
}

std::vector<std::string> lexicon_industries() {
  std::vector<std::string> v;
  for (const Lexicon& l : lexicons()) v.push_back(l.industry);
  return v;
}

std::vector<std::string> place_names(const Lexicon& lex, const std::string& noun, int n) {
  std::vector<std::string> v = rotate(towns(), offset_of(lex) + noun.size(), n);
  for (std::string& s : v) s += " " + noun;
  return v;
}

const std::vector<std::string>& town_names() { return towns(); }

std::vector<std::string> person_names(const Lexicon& lex, int n) { return rotate(people(), offset_of(lex), n); }

std::vector<std::string> machine_names(const Lexicon& lex, int n) {
  std::vector<std::string> v = rotate(tags(), offset_of(lex), n);
  for (std::string& s : v) s = cap(lex.machine) + " " + s;
  return v;
}

std::vector<std::string> period_names(const Lexicon& lex, int n) {
  if (n < 0 || n > 12) throw std::logic_error("lexicon: too many periods asked for");
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(std::string(kOrdinals[i]) + " " + lex.period);
  return v;
}

}  // namespace trex::ordata
