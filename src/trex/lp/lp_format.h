// The LP file format (CPLEX LP, and the dialect Gurobi writes).
//
// read_lp takes what is found in the wild: "\" line comments and "\* ... *\" block comments;
// every section spelling (minimize/minimise/minimum/min, maximize/.../max, subject to/such
// that/st/s.t., bounds/bound, general/generals/gen/integer/integers, binary/binaries/bin,
// end); names with brackets such as x[0] or flow[a,b]; constants on either side; ranged rows
// "l <= expr <= u"; bounds "x free", "-inf <= x <= 5", "x = 3", "x >= -infinity";
// quadratic terms "[ 2 x ^ 2 + 3 x * y ] / 2" in the objective and "[ x * y ]" in rows;
// "lazy constraints" and "user cuts" sections, read as ordinary rows; Gurobi's empty rows
// ("R0: <= 5") and objective constant ("+ 5 Constant"); repeated row names, which Gurobi
// writes and which are renamed "name#2", "name#3", ... (nothing in LP refers to rows); a
// "semi-continuous" section (also "semi", "semis": each listed variable is 0 or within its
// bounds, which must then be finite above and non-negative below; not integer); an "SOS"
// section of sets "name: S1:: x1:1 x2:2" (also under "sos1"/"sos2" headers, where the type
// may be left out). General-constraint, indicator and piecewise-linear sections are
// rejected with an error.
// Every error is an InputError naming the file and the line.
#pragma once

#include <string>
#include <string_view>

#include "trex/lp/model.h"
#include "trex/lp/read_limit.h"

namespace trex::lp {

// `filename` is only used in error messages.
// `limit` stops a read that outlives it (ReadTimeLimit); by default there is none.
Model read_lp(std::string_view text, const std::string& filename = "<lp>", ReadLimit limit = ReadLimit());

// Writes CPLEX LP text that read_lp reads back to the same model (same_model()).
// Numbers are written in shortest round-trip form. Throws InputError::field when a name
// cannot be written in LP format (a space, a leading digit, an operator character).
std::string write_lp(const Model& model);

// True when `name` can be written as an LP-format name.
bool is_valid_lp_name(std::string_view name);

}  // namespace trex::lp
