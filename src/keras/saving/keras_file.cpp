// Keras 3's whole-model file (.keras): a ZIP holding metadata.json, config.json (model.to_json(): architecture
// and compile_config) and model.weights.h5 (weights_h5.cpp). Also model_from_json, the architecture alone.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "keras/initializers/initializers.h"
#include "keras/models/model_state.h"
#include "keras/saving/serialization.h"
#include "keras/saving/weights_h5.h"
#include "keras/saving/zip_store.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/osprey.h"

namespace osprey::keras {

namespace ser = serialization;
using json = ser::json;

namespace {

constexpr const char* kConfig = "config.json";
constexpr const char* kMetadata = "metadata.json";
constexpr const char* kWeights = "model.weights.h5";
constexpr const char* kAssets = "assets/";

/// Where a layer group's assets live in the archive: "assets/layers/integer_lookup/" for "layers/integer_lookup/vars".
std::string assets_dir(const detail::LayerGroup& g) {
  const std::string& p = g.path;
  return kAssets + (p.ends_with("/vars") ? p.substr(0, p.size() - 5) : p) + "/";
}

/// The layers' assets (Keras's save_assets) as archive entries.
std::vector<detail::ZipEntry> asset_entries(const Model& model) {
  std::vector<detail::ZipEntry> out;
  for (const auto& g : detail::layer_groups(model)) {
    if (!g.layer) continue;
    for (auto& [file, data] : g.layer->save_assets()) out.push_back({assets_dir(g) + file, std::move(data)});
  }
  return out;
}

/// Keras's load_assets: each layer gets the files of its folder in the archive (none: an empty list; a layer that
/// needs some says what it misses).
void load_assets(Model& model, const std::map<std::string, std::string>& entries) {
  for (const auto& g : detail::layer_groups(model)) {
    if (!g.layer) continue;
    const std::string dir = assets_dir(g);
    std::vector<std::pair<std::string, std::string>> files;
    for (auto it = entries.lower_bound(dir); it != entries.end() && it->first.starts_with(dir); ++it) {
      const std::string file = it->first.substr(dir.size());
      if (!file.empty() && file.find('/') == std::string::npos) files.emplace_back(file, it->second);
    }
    g.layer->load_assets(files);
  }
}

}  // namespace

namespace models {

std::shared_ptr<Model> load_model(const std::string& path, LoadModelOptions options) {
  const saving::CustomObjectScope custom_objects(std::move(options.custom_objects));  // this load's, then none
  if (!path.ends_with(".keras")) {
    throw ValueError(fmt::format("File format not supported: filepath={}. Osprey loads the native Keras format "
                                 "(`.keras`); weights alone are read by `model.load_weights()` (`.weights.h5`).",
                                 path));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw NotFoundError(fmt::format("File not found: filepath={}. Please ensure the file is an accessible `.keras` "
                                    "zip file.",
                                    path));
  }
  const auto entries = detail::read_zip(path);
  for (const char* name : {kConfig, kWeights}) {
    if (!entries.count(name)) {
      throw ValueError(fmt::format("load_model: '{}' has no {} (not a Keras 3 model file)", path, name));
    }
  }
  try {
    const json config = ser::parse(entries.at(kConfig), "load_model: " + path + "'s config.json");
    std::shared_ptr<Model> model;
    {
      const detail::WeightsFollow follow;  // layers whose initializer Osprey does not sample get their weights below
      model = ser::model_from_object(config);
    }
    if (options.compile && config.contains("compile_config") && !config["compile_config"].is_null()) {
      ser::compile_from_config(*model, config["compile_config"], options.tf_logits_shortcut);
    }
    detail::load_weights_h5_image(*model, entries.at(kWeights), path + "'s " + kWeights);
    load_assets(*model, entries);
    return model;
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("load_model: '{}': a config field has the wrong type or is missing: {}", path,
                                 e.what()));
  }
}

}  // namespace models

void Model::save(const std::string& path) const {
  if (!path.ends_with(".keras")) {
    throw ValueError(fmt::format("Invalid filepath extension for saving. Please add a `.keras` extension for the "
                                 "native Keras format (Osprey writes that one; `save_weights()` writes "
                                 "`.weights.h5`). Received: filepath={}",
                                 path));
  }
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d@%H:%M:%S", &local);
  // keras_version: the Keras release whose format this is (Keras checks it when loading).
  const std::string metadata = fmt::format(R"({{"keras_version": "3.15.1", "date_saved": "{}", "osprey_version": "{}"}})",
                                           date, osprey::version());
  const std::string config = to_json();  // first: a model that cannot be described fails before anything is written
  if (!state().saves_files()) return;  // a multi-worker strategy's other workers: the chief writes
  std::vector<detail::ZipEntry> entries{{kMetadata, metadata}, {kConfig, config}, {kWeights, detail::weights_h5_image(*this)}};
  for (auto& e : asset_entries(*this)) entries.push_back(std::move(e));
  detail::write_zip(path, entries);
}

}  // namespace osprey::keras
