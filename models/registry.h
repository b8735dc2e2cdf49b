// DYNAMIX — build a model by its name (`model: cnn` in the config).
#pragma once

#include <string>
#include <vector>

#include "models/model.h"

namespace dynamix {

// Builds the named model for the spec, or loads `torchscript:PATH` (models/torchscript.h); an
// unknown name, an unfit spec or an unreadable file throws dynamix::Error.
ModelPtr make_model(const std::string& name, const ModelSpec& spec);

// Every name make_model accepts, sorted.
std::vector<std::string> model_names();

}  // namespace dynamix
