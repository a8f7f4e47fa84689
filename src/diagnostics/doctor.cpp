#include "osprey/doctor.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/env.h"
#include "osprey/config.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/tensor.h"
#include "runtime/device_manager.h"
#include "runtime/memory_policy.h"

namespace osprey {
std::string version();
}

namespace osprey::doctor {

using runtime::DeviceManager;
using runtime::DeviceType;

namespace {

// The test kernel: a 64×64×64 matmul on GPU:0 (soft placement off, so it cannot silently run elsewhere) against
// the same product on the CPU.
Check test_kernel() {
  Check c{"Test kernel", CheckState::fail, "", ""};
  const bool soft = config::get_soft_device_placement();
  const bool tf32 = config::experimental::tensor_float_32_execution_enabled();
  try {
    config::set_soft_device_placement(false);
    // TF32 (on by default, as in TensorFlow) rounds the operands to 10 bits: a 64-term product then differs from
    // the CPU's by ~4e-3. The check is of the GPU's arithmetic, so it runs in full float32.
    config::experimental::enable_tensor_float_32_execution(false);
    std::vector<float> av(64 * 64), bv(64 * 64);  // fixed values: the doctor must not move the user's RNG
    for (size_t i = 0; i < av.size(); ++i) {
      av[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
      bv[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
    }
    Tensor a, b;
    {
      DeviceScope cpu("/CPU:0");
      a = Tensor::from_vector(av, {64, 64});
      b = Tensor::from_vector(bv, {64, 64});
    }
    std::vector<float> on_cpu, on_gpu;
    {
      DeviceScope cpu("/CPU:0");
      on_cpu = ops::matmul(a, b).to_vector<float>();
    }
    std::string where;
    {
      DeviceScope gpu("/GPU:0");
      Tensor r = ops::matmul(a, b);
      where = r.device().name;
      on_gpu = r.to_vector<float>();
    }
    double worst = 0.0;
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      worst = std::max(worst, std::abs(double(on_gpu[i]) - on_cpu[i]) / std::max(1.0, std::abs(double(on_cpu[i]))));
    }
    if (worst <= 1e-4) {  // float32 accumulated in another order stays well inside this
      c.state = CheckState::pass;
      c.detail = fmt::format("a 64x64x64 matmul ran on {} and matches the CPU (largest relative difference {:.1e})",
                             where, worst);
    } else {
      c.detail = fmt::format("a 64x64x64 matmul on {} differs from the CPU by {:.2e} (relative)", where, worst);
      c.fix = "The GPU computes wrong results: check the driver (nvidia-smi), then report it with this output.";
    }
  } catch (const std::exception& e) {
    c.detail = fmt::format("a matmul on /GPU:0 failed: {}", e.what());
    c.fix = "Run the failing program with osprey::debugging::set_log_device_placement(true) and report this output.";
  }
  config::set_soft_device_placement(soft);
  config::experimental::enable_tensor_float_32_execution(tf32);
  return c;
}

}  // namespace

Report run() {
  Report r;
  auto& dm = DeviceManager::get();
  const auto& physical = dm.physical_devices();  // loads the plug-in and discovers
  const auto plugin = dm.plugin_status();
  auto add = [&](Check c) {
    const bool failed_before = std::any_of(r.checks.begin(), r.checks.end(),
                                           [](const Check& x) { return x.state == CheckState::fail; });
    if (failed_before && c.state != CheckState::note) {
      c.state = CheckState::skipped;
      c.detail = "skipped (needs the failed check above)";
      c.fix.clear();
    }
    r.checks.push_back(std::move(c));
  };

  const auto statuses = dm.platform_statuses();
  bool gpu_platform = false;
  for (const auto& d : physical) gpu_platform |= d.type == DeviceType::GPU;
  for (const auto& [name, st] : statuses) gpu_platform |= name != "CPU";

  // 1. The build and the plug-in. A GPU platform registered another way (tests) makes them notes.
  if (plugin.built || !gpu_platform) {
    add({"Osprey build", plugin.built ? CheckState::pass : CheckState::fail,
         plugin.built ? fmt::format("Osprey {} with the CUDA plug-in", version())
                      : fmt::format("Osprey {} was built without the CUDA plug-in (no CUDA toolkit at build time)",
                                    version()),
         plugin.built ? "" : "Rebuild on a machine with the CUDA toolkit (nvcc at /usr/local/cuda or on PATH)."});
    if (plugin.built) {
      add({"CUDA plug-in", plugin.loaded ? CheckState::pass : CheckState::fail,
           plugin.loaded ? "loaded " + plugin.path : "not loaded: " + plugin.error,
           plugin.loaded ? "" : dm.gpu_availability().fix});
    }
  } else {
    add({"Osprey build", CheckState::note, fmt::format("Osprey {}; GPU platform registered by the program", version()),
         ""});
  }
  // 2. Each GPU platform: driver and devices.
  for (const auto& [name, st] : statuses) {
    if (name == "CPU") continue;
    if (st.reason.empty()) {
      add({name + " platform", CheckState::pass, st.description.empty() ? "ready" : st.description, ""});
    } else {
      add({name + " platform", CheckState::fail, st.reason + (st.description.empty() ? "" : " (" + st.description + ")"),
           st.fix});
    }
  }
  // 3. CUDA_VISIBLE_DEVICES, read by the driver once.
  const auto cvd = env::get("CUDA_VISIBLE_DEVICES");
  add({"CUDA_VISIBLE_DEVICES", CheckState::note,
       cvd ? (cvd->empty() ? std::string("set to \"\" (empty): the driver shows no GPU to this process; unset it to "
                                         "see every GPU")
                           : fmt::format("set to \"{}\" (GPUs are renumbered from 0 in this order)", *cvd))
           : "not set (every GPU is visible)",
       ""});
  // The CPU side: how many threads the CPU kernels use, and what limits them.
  const int usable = runtime::allowed_cpus();
  const int machine = static_cast<int>(std::thread::hardware_concurrency());
  const auto from_env = runtime::intra_op_threads_from_environment();
  add({"CPU threads", CheckState::note,
       fmt::format("{} intra-op thread(s){}; this process may run on {} of the machine's {} CPUs{}",
                   dm.threads_for_intra_op(),
                   dm.intra_op_threads() == 0 && from_env ? fmt::format(" (from {})", from_env->first) : "", usable,
                   machine, usable < machine ? " (an affinity mask: taskset, or a container's cpuset)" : ""),
       ""});
  // 4. The GPUs found, and those ignored.
  for (const auto& msg : dm.ignored_gpus()) add({"Ignored GPU", CheckState::note, msg, ""});
  std::vector<std::string> names;
  for (const auto& d : physical) {
    if (d.type == DeviceType::GPU) {
      names.push_back(fmt::format("/physical_device:GPU:{} {} ({} MiB, compute capability {}.{})", d.platform_id,
                                  d.model_name, d.total_memory >> 20, d.cc_major, d.cc_minor));
    }
  }
  if (names.empty()) {
    auto why = dm.gpu_availability();
    add({"GPUs found", CheckState::fail, "none: " + why.reason, why.fix});
  } else {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : "; ") + n;
    add({"GPUs found", CheckState::pass, fmt::format("{}: {}", names.size(), list), ""});
  }
  // 5. Visible to the runtime (set_visible_devices), then the test kernel.
  const auto logical_gpus = config::list_logical_devices("GPU");
  if (logical_gpus.empty()) {
    auto why = dm.gpu_availability();
    add({"Logical GPUs", CheckState::fail, "none: " + why.reason, why.fix});
  } else {
    add({"Logical GPUs", CheckState::pass, fmt::format("{} (ops run on {} by default)", logical_gpus.size(),
                                                      logical_gpus[0].name),
         ""});
  }
  const bool failed = std::any_of(r.checks.begin(), r.checks.end(),
                                  [](const Check& x) { return x.state == CheckState::fail; });
  if (failed) {
    add({"Test kernel", CheckState::skipped, "", ""});
  } else {
    add(test_kernel());
  }
  r.gpu_usable = !std::any_of(r.checks.begin(), r.checks.end(),
                              [](const Check& x) { return x.state == CheckState::fail; }) &&
                 r.checks.back().state == CheckState::pass;
  return r;
}

std::string format(const Report& report) {
  std::ostringstream out;
  out << "Osprey doctor: can this process use a GPU?\n";
  for (const auto& c : report.checks) {
    const char* mark = c.state == CheckState::pass   ? "✓"
                       : c.state == CheckState::fail ? "✗"
                       : c.state == CheckState::note ? "·"
                                                     : "-";
    out << "  " << mark << " " << c.name << ": " << c.detail << "\n";
    if (!c.fix.empty()) out << "      fix: " << c.fix << "\n";
  }
  if (report.gpu_usable) {
    out << "Result: a GPU is usable; ops run on /device:GPU:0 unless a DeviceScope says otherwise.\n";
  } else {
    out << "Result: no GPU is usable; Osprey runs everything on the CPU (/device:CPU:0).\n";
  }
  return out.str();
}

std::string devices_table() {
  auto& dm = DeviceManager::get();
  std::vector<std::vector<std::string>> rows{
      {"logical device", "physical device", "name", "memory", "compute capability", "pci bus id"}};
  for (const auto* d : dm.devices()) {
    const auto& p = d->physical();
    const auto limit = d->allocator().limit();
    std::string memory = d->type() == DeviceType::GPU
                             ? fmt::format("{} MiB of {} MiB", limit.value_or(p.total_memory) >> 20,
                                           p.total_memory >> 20)
                             : fmt::format("{} MiB (host)", p.total_memory >> 20);
    rows.push_back({d->name(), fmt::format("/physical_device:{}:{}", runtime::device_type_name(d->type()), p.platform_id),
                    p.model_name, memory,
                    d->type() == DeviceType::GPU ? fmt::format("{}.{}", p.cc_major, p.cc_minor) : "-",
                    p.pci_bus_id.empty() ? "-" : p.pci_bus_id});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream out;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < rows[r].size(); ++i) {
      out << rows[r][i];
      if (i + 1 < rows[r].size()) out << std::string(width[i] - rows[r][i].size() + 2, ' ');
    }
    out << "\n";
  }
  if (config::list_logical_devices("GPU").empty()) {
    out << "No GPU: " << dm.gpu_availability().reason << "\n";
  }
  return out.str();
}

}  // namespace osprey::doctor
