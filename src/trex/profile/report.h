// The anatomy as a reader meets it: a plain-text summary, one JSON object (schema in
// docs/profile.md, "trex.profile.anatomy" version 1), and a self-contained HTML page whose plots
// are inline SVG (nothing to download).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trex/profile/anatomy.h"

namespace trex::profile {

// The summary and the `top` largest kernels.
std::string anatomy_text(const Anatomy& a, int top = 15);

nlohmann::ordered_json anatomy_json(const Anatomy& a);

std::string anatomy_html(const Anatomy& a);

}  // namespace trex::profile
