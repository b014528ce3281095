// The generic loader's field options (--id-field, --question-field, --answer-field), which
// `trex eval run`, `gen` and `list` share; defined in eval_command.cc.
#pragma once

#include "trex/oreval/benchmark.h"

namespace CLI {
class App;
}

namespace trex::cli {

// Adds the three options to command, each bound to its member of *fields (whose defaults are
// the help's defaults).
void add_field_options(CLI::App* command, oreval::FieldNames* fields);

}  // namespace trex::cli
