// The hook through which ops report themselves to an active gradient tape (implemented one layer up, in
// autodiff/). Ops define their backward functions; the tape decides whether to keep them.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::ops {

/// Maps the gradients of an op's outputs to the gradients of its inputs (an undefined Tensor: no gradient).
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& output_grads)>;

class GradientRecorder {
 public:
  virtual ~GradientRecorder() = default;
  /// True when any of the inputs is watched, so the op must be recorded.
  virtual bool should_record(std::span<const Tensor> inputs) const = 0;
  virtual void record(const char* op_name, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      BackwardFn backward) = 0;
};

/// The innermost active recorder on this thread, or nullptr.
GradientRecorder* active_recorder();
void set_active_recorder(GradientRecorder* recorder);

/// Pauses this thread's recording for its scope: an op composed of other ops runs them unrecorded and records
/// itself as one node with its own backward.
class RecordingPaused {
 public:
  RecordingPaused() : saved_(active_recorder()) { set_active_recorder(nullptr); }
  ~RecordingPaused() { set_active_recorder(saved_); }
  RecordingPaused(const RecordingPaused&) = delete;
  RecordingPaused& operator=(const RecordingPaused&) = delete;

 private:
  GradientRecorder* saved_;
};

/// Records the op on the active tape when one is watching any input; `make_backward` is only called then.
template <typename MakeBackward>
inline void maybe_record(const char* op_name, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         MakeBackward&& make_backward) {
  GradientRecorder* r = active_recorder();
  if (r && r->should_record(inputs)) r->record(op_name, inputs, outputs, make_backward());
}

}  // namespace osprey::ops
