// What a layer's kernel_regularizer / kernel_constraint (and bias_, pointwise_, ...) arguments do to its weights,
// written once for every layer that has them (Dense, the convolutions).
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers::detail {

/// A weight (nullptr when the layer has none, e.g. no bias) with its optional penalty and projection.
struct WeightRule {
  Variable* weight;
  const std::optional<Regularizer>& regularizer;
  const std::optional<Constraint>& constraint;
};

/// Whether any weight has a penalty (Layer::has_regularization).
inline bool any_penalty(std::initializer_list<WeightRule> rules) {
  for (const auto& r : rules) {
    if (r.weight && r.regularizer) return true;
  }
  return false;
}

/// The weights' penalties, in order (Layer::regularization_losses).
inline std::vector<Tensor> penalties(std::initializer_list<WeightRule> rules) {
  std::vector<Tensor> out;
  for (const auto& r : rules) {
    if (r.weight && r.regularizer) out.push_back((*r.regularizer)(r.weight->value()));
  }
  return out;
}

/// Each weight projected by its constraint (Layer::apply_constraints).
inline void constrain(std::initializer_list<WeightRule> rules) {
  for (const auto& r : rules) {
    if (r.weight && r.constraint) r.weight->assign((*r.constraint)(r.weight->value()));
  }
}

}  // namespace osprey::keras::layers::detail
