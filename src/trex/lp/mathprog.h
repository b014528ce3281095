// GNU MathProg models (.mod, with optional .dat data files), translated by GLPK's glpsol run
// as a separate process (GLPK is GPL-3+ and stays out of trex's address space):
//   glpsol --check -m MODEL [-d DATA ...] --wlp TEMP.lp
// then read with read_lp. CPLEX LP keeps the objective sense (glpsol's MPS writers drop a
// maximization), integer and binary columns; glpsol writes the objective constant as a
// comment after the objective, which read_mathprog adds back. A model with no rows and no
// columns (display statements only) is the empty model; rows without any column are refused.
#pragma once

#include <string>
#include <vector>

#include "trex/lp/model.h"
#include "trex/lp/read_limit.h"

namespace trex::lp {

// Throws InputError: "MODEL:LINE: message" for a MathProg error as glpsol reports it (syntax
// errors, a data statement that does not fit), naming a data file when it is the data that
// is wrong; "DATA: data file not found" for a data file that does not exist; and a clear
// message when glpsol is not installed. time_limit_s > 0 bounds the translation (glpsol's
// process group is killed then) and the reading of its LP together: ReadTimeLimit.
Model read_mathprog(const std::string& model_path, const std::vector<std::string>& data_paths = {},
                    double time_limit_s = 0);

}  // namespace trex::lp
