// The business content of an instance, before it is phrased: what the renderer turns into a
// statement. A family fills a Story with every datum its model uses (tables and facts), the
// rules in words, and the objective with its direction; render.h chooses the phrasing.
#pragma once

#include <string>
#include <vector>

namespace trex::ordata {

struct Table {
  std::string caption;               // "Per-unit data for each product"
  std::string row_header;            // "Product"
  std::vector<std::string> columns;  // "Profit ($/unit)"
  std::vector<std::string> rows;     // row labels
  std::vector<std::vector<std::string>> cells;  // rows x columns, numbers as printed
};

struct Story {
  std::string industry;   // e.g. "furniture manufacturing"
  std::string company;    // "Oakline Furniture"
  std::string setting;    // one or two sentences of context, no numbers
  std::string decision;   // what is to be decided
  std::vector<Table> tables;
  std::vector<std::string> facts;  // sentences that state scalar data with units
  std::vector<std::string> rules;  // constraints in words (numbers only as stated elsewhere)
  std::string objective;           // "maximize the total weekly profit (in dollars)"
  bool maximize = false;
  std::string integrality;         // e.g. "Products are made in whole units." or ""
};

// Formats a datum the way the model holds it (shortest form that reads back the same double).
std::string num(double v);

}  // namespace trex::ordata
