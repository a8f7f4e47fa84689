// Helpers the metric files share.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "keras/saving/serialization.h"
#include "osprey/keras/metrics.h"

namespace osprey::keras::metrics::detail {

/// A tensor's values on the host as float32 (labels and predictions of stateful metrics).
std::vector<float> host_values(const Tensor& t);
/// Keras's get_config(): the metric's name and dtype with `entries` added.
std::string config_with(const Metric& m, std::initializer_list<std::pair<const char*, serialization::json>> entries);
/// A confusion metric's config "thresholds": the list it was given, else the one threshold (none: null).
serialization::json thresholds_config(const std::vector<double>& list, std::optional<double> one);
inline double divide_no_nan(double a, double b) { return b == 0.0 ? 0.0 : a / b; }
/// One weight per value from one per sample (`w`, as update_weighted() gets them): each of a sample's
/// `values / w.size()` values (y_pred flattened, sample-major) carries its sample's weight; empty `w`: empty.
std::vector<double> per_value_weights(const std::vector<double>& w, std::size_t values);
/// ValueError unless least <= num_thresholds <= 2^20 (checked before the thresholds are made).
void check_threshold_count(int n, int least);
/// The metrics of the other files by Keras's names (class names and their snake_case, Keras's aliases); nullptr for
/// names they do not know.
std::shared_ptr<Metric> more_metrics_by_name(const std::string& name);

}  // namespace osprey::keras::metrics::detail
