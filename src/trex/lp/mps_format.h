// The MPS file format, free and fixed.
//
// Layout. Free MPS separates fields by white space. Fixed MPS puts them in columns 2-3,
// 5-12, 15-22, 25-36, 40-47 and 50-61, so names may hold spaces, a blank column name on a
// COLUMNS line means "the column of the line before", and a field 3 or 5 that begins with
// `$` starts a comment. MpsFormat::kAuto reads a file as fixed when every data line fits the
// fixed columns and some line reads differently in the two layouts (a name with a space, a
// blank name, a `$` comment); otherwise as free. Lines starting with `*` are comments.
//
// Sections, in this order: NAME, OBJSENSE (MIN/MAX on the same or the next line), ROWS (N,
// L, G, E; the first N row is the objective, later N rows are dropped), COLUMNS with MARKER
// INTORG/INTEND, RHS and RANGES in either order (E rows by the sign rule: R > 0 gives [rhs, rhs + R], R < 0
// gives [rhs + R, rhs]), BOUNDS, then SOS, QUADOBJ, QMATRIX and QCMATRIX in any order, and
// ENDATA. A section out of this order is an error. CSECTION (cones) is refused by name.
//
// Conventions where readers differ, each as COIN-OR's CoinMpsIO has it:
//  * An RHS value v on the objective row makes the objective constant -v (GLPK reads +v).
//  * A column between INTORG/INTEND markers that no BOUNDS line names gets [0, 1], as in
//    COIN-OR and GLPK; MpsOptions::integer_markers_unbounded gives CPLEX's [0, inf). Once a
//    BOUNDS line names it, its bounds are what the lines say (default [0, inf)).
//  * UP with a negative value on a column whose lower bound is still the default 0 makes the
//    lower bound -inf. MI makes the lower bound -inf and keeps the upper.
//  * Bound types UP, LO, FX, FR, MI, PL, BV, LI, UI and SC. SC v makes the column
//    semi-continuous with upper bound v (0 or no value: no upper bound, which the model then
//    refuses); SC on an integer column is an error.
//  * SOS: a header " S1 [SOS] [name] [priority]" (or S2) starts a set; each member line is
//    "[set] column [weight]" (weights default to the member's position).
// Every error is an InputError naming the file and the line.
#pragma once

#include <string>
#include <string_view>

#include "trex/lp/model.h"
#include "trex/lp/read_limit.h"

namespace trex::lp {

enum class MpsFormat { kAuto, kFree, kFixed };

struct MpsOptions {
  MpsFormat format = MpsFormat::kAuto;
  // CPLEX's reading: marker-integer columns without bounds get [0, inf) instead of [0, 1].
  bool integer_markers_unbounded = false;
};

// Parses "auto", "free" or "fixed"; throws InputError::field(what, ...) otherwise.
MpsFormat parse_mps_format(const std::string& text, const std::string& what);

// `filename` is only used in error messages. `limit` stops a read that outlives it
// (ReadTimeLimit); by default there is none.
Model read_mps(std::string_view text, const std::string& filename = "<mps>",
               const MpsOptions& options = {}, ReadLimit limit = ReadLimit());

// Writes free MPS that read_mps reads back to the same model (same_model()): OBJSENSE MAX
// for a maximized model, SC bounds, an SOS section with each set's name and priority.
// Numbers are written in shortest round-trip form. Throws InputError::field when a name
// cannot be written (empty or containing white space).
std::string write_mps(const Model& model);

}  // namespace trex::lp
