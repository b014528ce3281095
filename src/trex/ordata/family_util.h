// Helpers the family generators share: LP-safe keys from display names, tables, lists.
#pragma once

#include <string>
#include <vector>

#include "trex/ordata/family.h"
#include "trex/ordata/story.h"

namespace trex::ordata {

// "Oak chair" -> "oak_chair": a name valid in LP files and Python strings.
std::string key(const std::string& display);
// The first n names. REQUIRES: n <= names.size() (contracts cap sizes by the lists).
std::vector<std::string> first(const std::vector<std::string>& names, int n);
// "a, b and c"
std::string join_and(const std::vector<std::string>& items);
// A table with the given shape, cells filled with "".
Table table(std::string caption, std::string row_header, std::vector<std::string> columns,
            std::vector<std::string> rows);
// "Capitalized" first letter.
std::string cap(std::string s);

// Checks a family's industry list against the registry's requirement (>= 4). Throws logic_error.
void require_industries(const std::vector<std::string>& industries, const char* family);

}  // namespace trex::ordata
