// DYNAMIX — build a model by its name (`model: cnn` in the config).
#pragma once

#include <string>
#include <vector>

#include "models/model.h"

namespace dynamix {

// Builds the named model for the spec; an unknown name or an unfit spec throws dynamix::Error.
ModelPtr make_model(const std::string& name, const ModelSpec& spec);

// Every name make_model accepts, sorted.
std::vector<std::string> model_names();

}  // namespace dynamix
