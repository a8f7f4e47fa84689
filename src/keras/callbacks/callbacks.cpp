#include "osprey/keras/callbacks.h"

#include <cmath>

#include <fmt/format.h>

namespace osprey::keras {

void History::on_epoch_end(int e, Logs& logs) {
  epoch.push_back(e);
  for (const auto& [k, v] : logs) history[k].push_back(v);
  for (const auto& [k, v] : logs.arrays) arrays[k].push_back(v);
}

static double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

Progbar::Progbar(int target, int verbose, std::ostream& out, double interval, std::string unit_name)
    : target_(target), verbose_(verbose), out_(out), interval_(interval), unit_(std::move(unit_name)),
      start_(now_seconds()) {}

double Progbar::estimate_step_duration(int current, double now) {
  if (current <= 0) return 0.0;
  double per_unit = (time_after_first_step_ >= 0 && current > 1) ? (now - time_after_first_step_) / (current - 1)
                                                                  : (now - start_) / current;
  if (current == 1) time_after_first_step_ = now;
  return per_unit;
}

std::string Progbar::format_time(double t) const {
  if (t >= 1 || t == 0) return fmt::format(" {:.0f}s/{}", t, unit_);
  if (t >= 1e-3) return fmt::format(" {:.0f}ms/{}", t * 1e3, unit_);
  return fmt::format(" {:.0f}us/{}", t * 1e6, unit_);
}

// Keras prints |v| > 1e-3 as %.4f, else %.4e (verbose 2 compares without abs).
static std::string format_value(double v, bool use_abs) {
  const double a = use_abs ? std::abs(v) : v;
  return a > 1e-3 ? fmt::format("{:.4f}", v) : fmt::format("{:.4e}", v);
}

static int num_digits(int target) { return target > 0 ? static_cast<int>(std::log10(target)) + 1 : 1; }

// Width in code points: every byte that does not continue a UTF-8 sequence starts one.
static int code_points(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The model's values sorted by key, then the keys callbacks add to the logs ("learning_rate"), as Keras shows them;
// an array (one value per class) shows its mean, as Keras's Progbar does.
static std::vector<std::pair<std::string, double>> ordered(const Logs& values) {
  std::map<std::string, double> all(values.begin(), values.end());
  for (const auto& [k, v] : values.arrays) {
    double sum = 0.0;
    for (double x : v) sum += x;
    all[k] = v.empty() ? std::nan("") : sum / static_cast<double>(v.size());
  }
  std::vector<std::pair<std::string, double>> out, added;
  for (const auto& [k, v] : all) (k == "learning_rate" ? added : out).emplace_back(k, v);
  out.insert(out.end(), added.begin(), added.end());
  return out;
}

void Progbar::update(int current, const Logs& values, bool finalize) {
  const double now = now_seconds();
  const double per_unit = estimate_step_duration(current, now);
  if (verbose_ == 1) {
    if (now - last_update_ < interval_ && !finalize) return;
    std::string message(static_cast<std::size_t>(prev_total_width_), '\b');
    message += '\r';
    const int nd = num_digits(target_);
    std::string bar;
    int special = 0;
    const int width = 20;
    if (target_ < 0) {  // a pass of unknown length (Keras: target None)
      bar = fmt::format("{:>7}/Unknown", current);
      std::string info = fmt::format(" \x1b[1m{:.0f}s\x1b[0m", now - start_) + format_time(per_unit);
      for (const auto& [k, v] : ordered(values)) info += " - " + k + ": " + format_value(v, true);
      const int total_width = code_points(bar) + code_points(info) - 8;
      if (prev_total_width_ > total_width) info += std::string(static_cast<std::size_t>(prev_total_width_ - total_width), ' ');
      if (finalize) info += "\n";
      out_ << message << bar << info << std::flush;
      prev_total_width_ = total_width;
      last_update_ = now;
      return;
    }
    bar = fmt::format("\x1b[1m{:>{}}/{}\x1b[0m ", current, nd, target_);
    special = 8;
    const int prog_width = target_ > 0 ? static_cast<int>(width * (static_cast<double>(current) / target_)) : 0;
    std::string segment;
    if (prog_width > 0) {
      for (int i = 0; i < prog_width; ++i) segment += "\u2501";
      bar += "\x1b[32m" + segment + "\x1b[0m";
      special += 9;
    }
    segment.clear();
    for (int i = 0; i < width - prog_width; ++i) segment += "\u2501";
    bar += "\x1b[37m" + segment + "\x1b[0m";
    special += 9;
    std::string info;
    if (!finalize) {
      const double eta = per_unit * (target_ - current);
      const auto e = static_cast<long>(eta);
      std::string eta_format = eta > 3600 ? fmt::format("{}:{:02d}:{:02d}", e / 3600, (e % 3600) / 60, e % 60)
                               : eta > 60 ? fmt::format("{}:{:02d}", e / 60, e % 60)
                                          : fmt::format("{}s", e);
      info = " \x1b[1m" + eta_format + "\x1b[0m";
    } else {
      info = fmt::format(" \x1b[1m{:.0f}s\x1b[0m", now - start_);
    }
    special += 8;
    info += format_time(per_unit);
    for (const auto& [k, v] : ordered(values)) info += " - " + k + ": " + format_value(v, true);
    const int total_width = code_points(bar) + code_points(info) - special;
    if (prev_total_width_ > total_width) info += std::string(static_cast<std::size_t>(prev_total_width_ - total_width), ' ');
    if (finalize) info += "\n";
    message += bar + info;
    out_ << message << std::flush;
    prev_total_width_ = total_width;
  } else if (verbose_ == 2 && finalize) {
    std::string info = fmt::format("{:>{}}/{} - {:.0f}s -{}", current, num_digits(target_), target_, now - start_,
                                   format_time(per_unit));
    for (const auto& [k, v] : ordered(values)) info += " - " + k + ": " + format_value(v, false);
    out_ << info << "\n" << std::flush;
  }
  last_update_ = now;
}

ProgbarLogger::ProgbarLogger(std::ostream& out) : out_(out) {}

void ProgbarLogger::on_train_begin(Logs&) { in_fit_ = true; }
void ProgbarLogger::on_train_end(Logs&) { in_fit_ = false; }

// fit's steps: params' or, for passes of unknown length, the first epoch's count once it ended (Keras's target).
int ProgbarLogger::target() const { return params().steps >= 0 ? params().steps : learned_steps_; }

void ProgbarLogger::on_epoch_begin(int epoch, Logs&) {
  bar_.reset();
  seen_ = 0;
  if (params().verbose) bar_ = std::make_unique<Progbar>(target(), params().verbose, out_);
  if (params().verbose && params().epochs > 1) out_ << "Epoch " << epoch + 1 << "/" << params().epochs << "\n";
}

void ProgbarLogger::on_train_batch_end(int batch, Logs& logs) {
  seen_ = batch + 1;
  if (!params().verbose) return;
  if (!bar_) bar_ = std::make_unique<Progbar>(target(), params().verbose, out_);
  bar_->update(batch + 1, logs, false);
}

void ProgbarLogger::on_epoch_end(int, Logs& logs) {
  if (params().steps < 0 && learned_steps_ < 0) learned_steps_ = seen_;
  if (!params().verbose) return;
  if (!bar_) bar_ = std::make_unique<Progbar>(target(), params().verbose, out_);
  bar_->set_target(target());
  bar_->update(target(), logs, true);
}

// Validation inside fit() is silent; a standalone evaluate() draws its own bar.
void ProgbarLogger::on_test_begin(Logs&) {
  if (!in_fit_) {
    bar_.reset();
    seen_ = 0;
  }
}
void ProgbarLogger::on_test_batch_end(int batch, Logs& logs) {
  if (!in_fit_) seen_ = batch + 1;
  if (in_fit_ || !params().verbose) return;
  if (!bar_) bar_ = std::make_unique<Progbar>(params().steps, params().verbose, out_);
  bar_->update(batch + 1, logs, false);
}
void ProgbarLogger::on_test_end(Logs& logs) {
  if (in_fit_ || !params().verbose) return;
  if (!bar_) bar_ = std::make_unique<Progbar>(params().steps, params().verbose, out_);
  const int steps = params().steps >= 0 ? params().steps : seen_;
  bar_->set_target(steps);
  bar_->update(steps, logs, true);
}
void ProgbarLogger::on_predict_begin(Logs&) {
  bar_.reset();
  seen_ = 0;
}
void ProgbarLogger::on_predict_batch_end(int batch, Logs&) {
  seen_ = batch + 1;
  if (!params().verbose) return;
  if (!bar_) bar_ = std::make_unique<Progbar>(params().steps, params().verbose, out_);
  bar_->update(batch + 1, {}, false);
}
void ProgbarLogger::on_predict_end(Logs&) {
  if (!params().verbose) return;
  if (!bar_) bar_ = std::make_unique<Progbar>(params().steps, params().verbose, out_);
  const int steps = params().steps >= 0 ? params().steps : seen_;
  bar_->set_target(steps);
  bar_->update(steps, {}, true);
}

}  // namespace osprey::keras
