// NumPy broadcasting for the element-wise kernels: the output's shape and each operand's strides through it.
#pragma once

#include <initializer_list>

#include "ops/attrs.h"
#include "osprey/shape.h"

namespace osprey::ops {

/// The strides of up to three operands through `out` (each operand broadcastable to it), with size-1 axes dropped
/// and adjacent axes merged where every operand allows it: a rank-6 broadcast of contiguous blocks is often rank 2
/// here. InvalidArgumentError when more than kMaxBroadcastRank axes remain.
StridedGeometry strided_geometry(const Shape& out, std::initializer_list<const Shape*> operands);

/// The axes of `out` along which `operand` is broadcast (aligned at the last axis): what its gradient is summed
/// over.
std::vector<int> broadcast_axes(const Shape& operand, const Shape& out);

}  // namespace osprey::ops
