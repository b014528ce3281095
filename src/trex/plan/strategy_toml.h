// Reading [run] and [strategy] tables that sit inside another TOML file (validation runs,
// ladder scenarios). Internal to the plan part: it exposes toml++.
#pragma once

#include <string>

#include "toml++/toml.h"
#include "trex/plan/strategy.h"

namespace trex::plan {

Run read_run(const toml::table& t, const std::string& file);
// Fields the table does not state take the stack's defaults (overlaps, ZeRO-3 prefetch).
Strategy read_strategy(const toml::table& t, const std::string& file, const StackProfile& stack = {});

}  // namespace trex::plan
