// The family files, each adding its families to the registry (family.cc lists them in order).
#pragma once

#include <vector>

#include "trex/ordata/family.h"

namespace trex::ordata {

void add_production_families(std::vector<const Family*>& out);
void add_network_families(std::vector<const Family*>& out);
void add_selection_families(std::vector<const Family*>& out);
void add_scheduling_families(std::vector<const Family*>& out);
void add_supply_families(std::vector<const Family*>& out);
void add_allocation_families(std::vector<const Family*>& out);
void add_planning_families(std::vector<const Family*>& out);

}  // namespace trex::ordata
