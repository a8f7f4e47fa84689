// keras.callbacks.TensorBoard on osprey::summary's event writer, laid out as Keras 3 lays its runs out.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/logging.h"
#include "osprey/errors.h"
#include "osprey/keras/callbacks.h"
#include "osprey/keras/layers/layer.h"
#include "osprey/keras/model.h"
#include "osprey/keras/optimizers.h"

namespace osprey::keras {

UpdateFreq::UpdateFreq(const std::string& name) {
  if (name == "epoch") batches_ = 0;
  else if (name == "batch") batches_ = 1;
  else
    throw ValueError(fmt::format("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches; "
                                 "received update_freq=\"{}\"", name));
}

UpdateFreq::UpdateFreq(int batches) : batches_(batches) {
  if (batches < 1)
    throw ValueError(fmt::format("TensorBoard: update_freq as a number of batches must be >= 1; received {}", batches));
}

TensorBoard::TensorBoard(std::string log_dir, TensorBoardOptions options)
    : log_dir_(std::move(log_dir)), o_(std::move(options)) {
  if (log_dir_.empty()) throw ValueError("TensorBoard: log_dir is empty (give the folder to write the run into)");
  if (o_.histogram_freq < 0)
    throw ValueError(fmt::format("TensorBoard: histogram_freq must be >= 0; received {}", o_.histogram_freq));
}

std::string TensorBoard::train_dir() const { return (std::filesystem::path(log_dir_) / "train").string(); }
std::string TensorBoard::validation_dir() const { return (std::filesystem::path(log_dir_) / "validation").string(); }

// The callback's writers reach the file at most once a second while training (and when the run ends): a write
// per 10 records and a flush per epoch were a system call every few batches, most of the callback's cost on a
// fast model (0.5 µs of the seed model's 16 µs step). TensorBoard itself reloads every 5 s.
static summary::WriterOptions callback_writer_options() { return {.max_queue = 1000, .flush_millis = 1000}; }

summary::SummaryWriter& TensorBoard::train_writer() {
  if (!train_) train_ = std::make_unique<summary::SummaryWriter>(train_dir(), callback_writer_options());
  return *train_;
}

summary::SummaryWriter& TensorBoard::val_writer() {
  if (!val_) val_ = std::make_unique<summary::SummaryWriter>(validation_dir(), callback_writer_options());
  return *val_;
}

static double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void TensorBoard::on_train_begin(Logs&) {
  training_ = true;
  global_train_batch_ = 0;
  // A new pair of event files per fit, as Keras resets its writers in set_model; made now, so that a log_dir that
  // cannot be written fails before the first step.
  train_.reset();
  val_.reset();
  auto& writer = train_writer();
  if (o_.write_graph && model()) {
    std::string config;
    try {
      config = model()->to_json();
    } catch (const std::exception& e) {  // as Keras: a model that cannot be serialised is not drawn
      osprey::log::warning(fmt::format("TensorBoard: the model failed to serialize as JSON; its graph is not written: {}", e.what()));
    }
    if (!config.empty()) writer.write_string("keras", config, 0, "graph_keras_model", "1");
  }
}

void TensorBoard::on_train_end(Logs&) {
  training_ = false;
  auto train = std::move(train_);
  auto val = std::move(val_);
  if (train) train->close();
  if (val) val->close();
}

void TensorBoard::on_epoch_begin(int, Logs&) {
  if (o_.write_steps_per_second && model() && model()->optimizer()) {
    epoch_start_iterations_ = model()->optimizer()->iterations();
    epoch_start_ = std::chrono::steady_clock::now();
  }
}

void TensorBoard::on_train_batch_begin(int, Logs&) {
  ++global_train_batch_;
  if (o_.write_steps_per_second) batch_start_ = std::chrono::steady_clock::now();
}

void TensorBoard::on_train_batch_end(int, Logs& logs) {
  const int every = o_.update_freq.batches();
  if (every == 0 || global_train_batch_ % every != 0) return;
  if (o_.write_steps_per_second) {
    const double t = seconds_since(batch_start_);
    train_writer().scalar("batch_steps_per_second", t > 0 ? 1.0 / t : 0.0, global_train_batch_);
  }
  train_writer().scalars(logs, global_train_batch_, "batch_");  // one record per batch for all its values
}

void TensorBoard::on_test_end(Logs& logs) {
  if (!model() || !model()->optimizer()) return;
  auto& writer = val_writer();
  const int64_t step = model()->optimizer()->iterations();
  for (const auto& [name, value] : logs) writer.scalar("evaluation_" + name + "_vs_iterations", value, step);
  if (!training_) writer.flush();  // model.evaluate() on its own: nothing later flushes
}

void TensorBoard::on_epoch_end(int epoch, Logs& logs) {
  Logs train_logs, val_logs;
  for (const auto& [name, value] : logs) (name.rfind("val_", 0) == 0 ? val_logs[name.substr(4)] : train_logs[name]) = value;
  auto optimizer = model() ? model()->optimizer() : nullptr;
  if (optimizer) train_logs["learning_rate"] = optimizer->learning_rate();
  if (o_.write_steps_per_second && optimizer) {
    const double t = seconds_since(epoch_start_);
    train_logs["steps_per_second"] = t > 0 ? static_cast<double>(optimizer->iterations() - epoch_start_iterations_) / t : 0.0;
  }
  auto& train = train_writer();
  train.scalars(train_logs, epoch, "epoch_");
  if (!val_logs.empty()) {
    auto& val = val_writer();
    val.scalars(val_logs, epoch, "epoch_");
  }
  if (o_.histogram_freq > 0 && epoch % o_.histogram_freq == 0 && model()) {
    for (const auto& layer : model()->layers()) {
      for (Variable* weight : layer->variables()) {
        std::string name = weight->path().empty() ? layer->name() + "/" + weight->name() : weight->path();
        std::replace(name.begin(), name.end(), ':', '_');
        train.histogram(name + "/histogram", weight->value(), epoch);
      }
    }
  }
  // Not flushed here: the writers reach the file within a second (callback_writer_options), and at the end.
}

}  // namespace osprey::keras
