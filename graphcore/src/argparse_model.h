// argparse evaluated statically (argparse_model.cpp).
#pragma once
#include "value.h"

namespace graphcore::eval {

// The `argparse` module: ArgumentParser, whose parse_args parses AnalysisOptions::script_args
// against the script's add_argument calls; Namespace; BooleanOptionalAction.
Value argparse_module();

}  // namespace graphcore::eval
