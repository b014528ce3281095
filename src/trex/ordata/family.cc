#include "trex/ordata/family.h"

#include "trex/ordata/families.h"
#include "trex/ordata/family_util.h"

namespace trex::ordata {

const std::vector<const Family*>& all_families() {
  static const std::vector<const Family*> families = [] {
    std::vector<const Family*> v;
    add_production_families(v);
    add_network_families(v);
    add_selection_families(v);
    add_scheduling_families(v);
    add_supply_families(v);
    add_allocation_families(v);
    add_planning_families(v);
    for (const Family* f : v) require_industries(f->industries(), f->contract().family.c_str());
    return v;
  }();
  return families;
}

const Family* find_family(const std::string& name) {
  for (const Family* f : all_families())
    if (f->contract().family == name) return f;
  return nullptr;
}

}  // namespace trex::ordata
