// Helpers the family generators share: LP-safe keys from display names, tables, lists.
#pragma once

#include <string>
#include <vector>

#include "trex/ordata/family.h"
#include "trex/ordata/rng.h"
#include "trex/ordata/story.h"

namespace trex::ordata {

// "Oak chair" -> "oak_chair": a name valid in LP files and Python strings.
std::string key(const std::string& display);
// The first n names. REQUIRES: n <= names.size() (contracts cap sizes by the lists).
std::vector<std::string> first(const std::vector<std::string>& names, int n);
// n distinct names in an order drawn from the sample's stream: instances of one size do not
// all name the same first n. REQUIRES: n <= names.size().
std::vector<std::string> draw_names(const std::vector<std::string>& names, int n, Rng& rng);
// n consecutive names from a start drawn from the sample's stream (periods stay in order).
// REQUIRES: n <= names.size().
std::vector<std::string> draw_run(const std::vector<std::string>& names, int n, Rng& rng);
// One of several wordings of the same fact, drawn from the sample's stream: the text varies
// while the model does not. A wording must hold no digits (the reviewer checks every number).
std::string draw_wording(Rng& rng, const std::vector<std::string>& wordings);
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
