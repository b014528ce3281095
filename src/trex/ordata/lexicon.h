// The vocabulary of one industry, shared by the families that phrase a plant, its products,
// machines, people, customers and calendar (families_*.cc built on it): a family picks the
// parts it needs and so speaks every industry of the list, instead of keeping a flavour table
// of its own. Names carry no digits, so the reviewer never meets a number the model lacks.
#pragma once

#include <string>
#include <vector>

namespace trex::ordata {

struct Lexicon {
  std::string industry;  // "furniture manufacturing"
  std::string company;   // "Oakline Furniture"
  std::string product;   // singular noun for what it makes: "piece of furniture"
  std::vector<std::string> products;  // at least 8
  std::string unit;      // the unit a product is counted in: "unit", "pallet", "batch"
  std::string plant;     // "workshop", "mill", "plant"
  std::string customer;  // "showroom", "distributor"
  std::string machine;   // "saw line", "press"
  std::string worker;    // "carpenter", "operator"
  std::string period;    // "week", "day", "month"
  std::string material;  // the main input: "lumber"
  std::string material_unit;  // "board feet"
};

// Ten industries; the families built on the lexicon use all of them.
const std::vector<Lexicon>& lexicons();
std::vector<std::string> lexicon_industries();

// n names of one kind for an industry, varied by industry so the same family reads
// differently in each: "Ashford mill", "Brookton mill", ... REQUIRES: n <= 12.
std::vector<std::string> place_names(const Lexicon& lex, const std::string& noun, int n);
// All 16 town names (no digits), for families that draw their places from the sample's stream
// (draw_names in family_util.h) instead of the industry's fixed rotation.
const std::vector<std::string>& town_names();
std::vector<std::string> person_names(const Lexicon& lex, int n);
// "Line Amber", "Line Birch", ...: n machines. REQUIRES: n <= 12.
std::vector<std::string> machine_names(const Lexicon& lex, int n);
// "the first week", "the second week", ...: n periods without digits. REQUIRES: n <= 12.
std::vector<std::string> period_names(const Lexicon& lex, int n);

}  // namespace trex::ordata
