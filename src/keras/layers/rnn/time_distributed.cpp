// keras.layers.TimeDistributed (keras/src/layers/rnn/time_distributed.py): the wrapped layer over (batch · steps,
// ...) at once, or step by step for a layer whose training output mixes the samples of its batch.
#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/rnn.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

TimeDistributed::TimeDistributed(std::shared_ptr<Layer> layer, std::string name)
    : Layer(name, "time_distributed"), layer_(std::move(layer)) {
  if (!layer_) throw ValueError("TimeDistributed: the wrapped layer is null");
  if (layer_->num_inputs() != 1) {
    throw ValueError(fmt::format("TimeDistributed wraps a layer of one input; '{}' ({}) takes several", layer_->name(),
                                 layer_->class_name()));
  }
}

Shape TimeDistributed::build(const Shape& input_shape) {
  if (input_shape.rank() < 1) {
    throw ValueError(fmt::format("`TimeDistributed` Layer should be passed an `input_shape` with at least 3 "
                                 "dimensions, received: (None, {})",
                                 fmt::join(input_shape.dims(), ", ")));
  }
  const auto d = input_shape.dims();
  const Shape step(std::vector<int64_t>(d.begin() + 1, d.end()));
  if (built_ && step != step_shape_) {
    throw ValueError(fmt::format("TimeDistributed '{}' was built for steps of shape {}, got {}", name_,
                                 step_shape_.to_string(), step.to_string()));
  }
  const bool first = !layer_->built();
  const Shape inner = layer_->build(step);
  if (first) {  // Keras's paths: "time_distributed/dense/kernel"
    for (auto* v : layer_->variables()) v->set_path(name_ + "/" + v->path());
  }
  step_shape_ = step;
  std::vector<int64_t> out{input_shape[0]};
  for (auto x : inner.dims()) out.push_back(x);
  return finish_build(Shape(out));
}

Tensor TimeDistributed::call(const Tensor& inputs, bool training) {
  const auto& s = inputs.shape();
  if (s.rank() < 3) {
    throw ValueError(fmt::format("TimeDistributed '{}' takes inputs (batch, steps, ...); got shape {}", name_,
                                 s.to_string()));
  }
  const auto d = s.dims();
  if (!built_) build(Shape(std::vector<int64_t>(d.begin() + 1, d.end())));
  const int64_t B = s[0], T = s[1];
  std::vector<int64_t> flat{B * T};
  flat.insert(flat.end(), d.begin() + 2, d.end());
  auto with_steps = [&](const Tensor& y, int64_t batch) {  // (batch · T, ...) -> (batch, T, ...)
    std::vector<int64_t> out{batch, T};
    const auto yd = y.shape().dims();
    out.insert(out.end(), yd.begin() + 1, yd.end());
    return osprey::ops::reshape(y, Shape(out));
  };
  if (!(training && layer_->mixes_samples())) return with_steps(layer_->call(osprey::ops::reshape(inputs, Shape(flat)), training), B);
  // Step by step (each step's batch apart), the outputs put back in (batch, steps, ...) order.
  std::vector<int64_t> step_major{T, B};
  step_major.insert(step_major.end(), d.begin() + 2, d.end());
  std::vector<int> perm{1, 0};
  for (int i = 2; i < s.rank(); ++i) perm.push_back(i);
  const Tensor by_step = osprey::ops::transpose(inputs, perm);  // (T, B, ...)
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int64_t> one(d.begin() + 2, d.end());
    one.insert(one.begin(), B);
    const Tensor y = layer_->call(osprey::ops::reshape(osprey::ops::slice_axis(by_step, 0, t, 1), Shape(one)), training);
    std::vector<int64_t> with_one{1};
    for (auto x : y.shape().dims()) with_one.push_back(x);
    outs.push_back(osprey::ops::reshape(y, Shape(with_one)));
  }
  const Tensor stacked = osprey::ops::concat(outs, 0);  // (T, B, ...)
  std::vector<int> back{1, 0};
  for (int i = 2; i < stacked.shape().rank(); ++i) back.push_back(i);
  return osprey::ops::transpose(stacked, back);
}

void TimeDistributed::append_trainable_variables(std::vector<Variable*>& out) {
  if (trainable) layer_->append_trainable_variables(out);
}

namespace ser = serialization;
using ser::json;

std::string TimeDistributed::get_config() const {
  json c = ser::base_config(*this);
  c["layer"] = ser::layer_object(*layer_, layer_->built() ? std::vector<Shape>{step_shape_} : std::vector<Shape>{});
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(time_distributed) {
  ser::register_layer_class("TimeDistributed", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (!c.contains("layer") || !c["layer"].is_object()) throw ValueError("TimeDistributed: the config has no `layer`");
    return std::make_shared<TimeDistributed>(ser::layer_from_object(c["layer"]), ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
