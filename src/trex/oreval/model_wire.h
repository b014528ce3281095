// An lp::Model as bytes for the solve helper (solve_helper.h) and back, exactly.
//
// The evaluator hands a model it already holds (a program's final model, read from its record
// or its model.lp) to the exec'd helper as these bytes: CBOR (RFC 8949, nlohmann's to_cbor) of
// this structure, every field of the Model kept as it is, in its order (no normalising, no name
// uniquifying, no bound clamping):
//
//   {"name": s, "sense": "min"|"max", "objective_name": s, "constant": d,
//    "vars":  [[name, lower, upper, "C"|"I"|"B", cost, semicontinuous], ...],
//    "rows":  [[name, lower, upper, [[var, coef], ...], [[i, j, q], ...]], ...],
//    "qobj":  [[i, j, q], ...],
//    "sos":   [[name, type, priority, [var, ...], [weight, ...]], ...]}
//
// CBOR, not JSON: a string is its bytes as they are, so a name that is not UTF-8 (the LP reader
// takes any byte >= 0x80) comes back unchanged, where JSON would have replaced its bytes with
// U+FFFD and made two such names one. A double d is an IEEE float64 (float32 when that holds it
// exactly), so it reads back to the same bits, -0.0 included; inf, -inf and nan are the strings
// "inf", "-inf" and "nan".
#pragma once

#include <string>

#include "trex/lp/model.h"

namespace trex::oreval {

std::string model_to_wire(const lp::Model& m);

// Throws InputError naming `file` on anything that is not what model_to_wire writes (a wrong
// shape, an index out of range, a duplicate name).
lp::Model model_from_wire(const std::string& bytes, const std::string& file);

}  // namespace trex::oreval
