// `with(layer, {...})`: a layer's config text, base_config's keys then these, as the layer families write theirs.
// Declared once here: the families' sources share unity-build units (OSPREY_UNITY_BUILD_LIBRARY).
#pragma once

#include "keras/saving/serialization.h"

namespace osprey::keras::layers {

inline constexpr auto with = serialization::config_text;

}  // namespace osprey::keras::layers
