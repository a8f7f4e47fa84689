// Keras 3's weights file (.weights.h5). The HDF5 work lives in a plug-in, libosprey_hdf5.so, opened on first use
// so that programs that never touch HDF5 do not load libhdf5 and its ~30 dependencies.
#pragma once

#include <string>
#include <vector>

namespace osprey {
class Variable;
}
namespace osprey::keras {
class Layer;
class Model;
namespace detail {
/// One layer's group in a Keras weights file: its path ("layers/dense/vars", "encoder/vars",
/// "layers/functional/layers/dense/vars"), the layer's name and its variables in Keras's order (trainable first;
/// none for a nested model's own group).
struct LayerGroup {
  std::string path;
  std::string name;
  std::vector<Variable*> vars;
  /// The datasets' names, one per variable: "0", "1", ... or a key of the layer's own (named_saved_variables()).
  std::vector<std::string> keys;
  /// The layer (nullptr for a nested model's own group): its assets live under the path without "/vars".
  Layer* layer = nullptr;
};
/// Keras's tree of layer groups for `model` (keras/src/saving/saving_lib.py _save_state): a functional model's or
/// Sequential's layer list keyed by snake_case class names; a subclass's layers by their attribute names, sorted,
/// with the unnamed ones in its "layers" list; nested models walked in place, each layer once.
std::vector<LayerGroup> layer_groups(const Model& model);
/// Keras's naming.to_snake_case: "Dense" -> "dense", "LeakyReLU" -> "leaky_re_lu", "RMSprop" -> "rm_sprop".
std::string to_snake_case(const std::string& class_name);
/// Writes `model`'s layer variables and (when compiled and built) its optimizer's variables in Keras 3's layout,
/// replacing `path` atomically (core/atomic_file.h).
void save_weights_h5(const Model& model, const std::string& path);
/// Reads a file written by Keras 3 or save_weights_h5() into `model` (layers by position of their class, like Keras).
void load_weights_h5(Model& model, const std::string& path);
/// The same in memory (a .keras file's model.weights.h5): the file's bytes, and loading from them. `what` names
/// the source in errors.
std::string weights_h5_image(const Model& model);
void load_weights_h5_image(Model& model, const std::string& image, const std::string& what);

/// What the plug-in exports (`osprey_hdf5_api`); the version changes whenever this struct does. The plug-in works
/// on in-memory images (HDF5's core driver): no temporary files.
inline constexpr int kHdf5ApiVersion = 4;
struct Hdf5Api {
  int version;
  std::string (*save)(const Model& model);
  void (*load)(Model& model, const std::string& image, const std::string& what);
};
}  // namespace detail
}  // namespace osprey::keras
