// The 512-point space the search and prior tests share: three parameters of 8 values each.
#pragma once

#include "trex/aura/target.h"

namespace trex::aura {

inline TuneTarget test_grid() {
  TuneTarget t;
  t.kernel = "test";
  t.dims = {1};
  t.space = {{"a", {1, 2, 3, 4, 5, 6, 7, 8}},
             {"b", {16, 32, 48, 64, 80, 96, 112, 128}},
             {"c", {0, 1, 2, 3, 4, 5, 6, 7}}};
  return t;
}

}  // namespace trex::aura
