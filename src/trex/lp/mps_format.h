// The MPS file format, free form (names separated by white space; fixed-column files whose
// names hold no spaces read the same way).
//
// read_mps takes NAME, OBJSENSE (MIN/MAX on the same or the next line), OBJSENSE MAXIMIZE,
// ROWS (N, L, G, E; the first N row is the objective, later N rows are dropped), COLUMNS
// with MARKER INTORG/INTEND, RHS (a value on the objective row is minus the objective
// constant), RANGES (with the usual sign rules for E rows), BOUNDS (UP, LO, FX, FR, MI, PL,
// BV, LI, UI), QUADOBJ (upper triangle) and QMATRIX (full), QCMATRIX for quadratic rows,
// ENDATA. An UP bound below zero on a variable whose lower bound is still the default 0
// makes the lower bound -inf, as CPLEX does. Semi-continuous (SC) bounds and SOS sections
// are rejected. Every error is an InputError naming the file and the line.
#pragma once

#include <string>
#include <string_view>

#include "trex/lp/model.h"

namespace trex::lp {

// `filename` is only used in error messages.
Model read_mps(std::string_view text, const std::string& filename = "<mps>");

// Writes free MPS that read_mps reads back to the same model (same_model()).
// Numbers are written in shortest round-trip form. Throws InputError::field when a name
// cannot be written (empty or containing white space).
std::string write_mps(const Model& model);

}  // namespace trex::lp
