// A compile_config's losses and metrics both ways (loss_metric_config.cpp), for compile_config.cpp.
#pragma once

#include <string>
#include <vector>

#include "keras/saving/serialization.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/metrics.h"

namespace osprey::keras::serialization {

/// A loss as a compile_config holds it: a string, a registered function, a Keras class with its config, or a
/// registered class of the user's.
LossRef loss_from(const json& j);
/// A list of metrics (strings or objects).
std::vector<MetricRef> metrics_from(const json& j);
/// A loss or a list of metrics as Keras writes them; `where` names the model in errors.
json loss_json(const LossRef& l, const std::string& where);
json metric_list(const std::vector<MetricRef>& list, const std::string& where);

}  // namespace osprey::keras::serialization
