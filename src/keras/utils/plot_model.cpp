// keras.utils.model_to_dot / plot_model: the functional graph (Sequential's too, once built) as DOT; `dot` is run
// as a child process with an argument vector (no shell), the DOT on its stdin and the drawing on its stdout.
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "keras/models/model_state.h"
#include "osprey/errors.h"
#include "osprey/keras/plot.h"

extern char** environ;

namespace osprey::keras::utils {

namespace {

// A DOT string literal's contents.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string shape_text(const Shape& per_sample) {
  std::vector<int64_t> dims{0};  // the batch: None
  for (auto d : per_sample.dims()) dims.push_back(d);
  return Shape(dims).to_keras_string();
}

// The `dot` program on PATH, or "".
std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  std::size_t at = 0;
  while (at <= p.size()) {
    const std::size_t end = std::min(p.find(':', at), p.size());
    const std::string dir = p.substr(at, end - at);
    const std::string candidate = (dir.empty() ? "." : dir) + "/dot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return "";
}

}  // namespace

namespace {

// Text inside a Graphviz HTML-like label.
std::string html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Shapes as Keras prints layer.input / layer.output's: one "(None, 8)", several "[(None, 8), (None, 4)]".
std::string shapes_text(const std::vector<Shape>& shapes) {
  if (shapes.empty()) return "?";
  if (shapes.size() == 1) return shape_text(shapes[0]);
  std::string out;
  for (const auto& sh : shapes) out += (out.empty() ? "" : ", ") + shape_text(sh);
  return "[" + out + "]";
}

// A layer's box: Keras 3's HTML table (model_visualization.make_layer_label): a black title row with the name and
// class, a row for the activation, then one cell each for the input and output shapes, the output dtype and
// whether a layer with weights trains.
std::string node_label(const Node& n, const PlotOptions& o) {
  const std::string cls = n.is_input() ? "InputLayer" : n.layer->class_name();
  const int colspan = std::max(1, (o.show_dtype ? 1 : 0) + (o.show_trainable ? 1 : 0) + (o.show_shapes ? 2 : 0));
  std::string t = "<table border=\"0\" cellborder=\"1\" bgcolor=\"black\" cellpadding=\"10\">";
  t += fmt::format("<tr><td colspan=\"{}\" bgcolor=\"black\"><font point-size=\"16\" color=\"white\">", colspan);
  t += o.show_layer_names ? fmt::format("<b>{}</b> ({})", html(n.name), html(cls)) : fmt::format("<b>{}</b>", html(cls));
  t += "</font></td></tr>";
  if (o.show_layer_activations && !n.is_input()) {
    const auto config = nlohmann::json::parse(n.layer->get_config(), nullptr, false);
    if (config.is_object()) {
      if (auto it = config.find("activation"); it != config.end() && it->is_string()) {
        t += fmt::format("<tr><td bgcolor=\"white\" colspan=\"{}\"><font point-size=\"14\">Activation: "
                         "<b>{}</b></font></td></tr>",
                         colspan, html(it->get<std::string>()));
      }
    }
  }
  std::string cols;
  const auto cell = [](const std::string& text) {
    return "<td bgcolor=\"white\"><font point-size=\"14\">" + text + "</font></td>";
  };
  if (o.show_shapes) {
    if (!n.is_input()) {
      std::vector<Shape> in;
      for (const auto& t_in : n.inputs) in.push_back(t_in.shape());
      cols += cell("Input shape: <b>" + html(shapes_text(in)) + "</b>");
    }
    cols += cell("Output shape: <b>" + html(shapes_text(n.shapes)) + "</b>");
  }
  if (o.show_dtype) cols += cell("Output dtype: <b>" + dtype_name(n.dtype) + "</b>");
  if (o.show_trainable && !n.is_input() && n.layer->count_params() > 0) {
    cols += n.layer->trainable ? "<td bgcolor=\"forestgreen\"><font point-size=\"14\" color=\"white\"><b>Trainable</b>"
                                 "</font></td>"
                               : "<td bgcolor=\"firebrick\"><font point-size=\"14\" color=\"white\"><b>Non-trainable"
                                 "</b></font></td>";
  }
  if (!cols.empty()) t += "<tr>" + cols + "</tr>";
  return t + "</table>";
}

// A nested model drawn as its own graph (expand_nested): one with a graph of layers (functional, Sequential once
// built); subclassed ones stay one box.
const Model* expandable(const Node& n, const PlotOptions& o) {
  if (!o.expand_nested || n.is_input()) return nullptr;
  const auto* m = dynamic_cast<const Model*>(n.layer.get());
  return m && !m->state().subclassed && m->state().graph ? m : nullptr;
}

struct Ends {
  std::string first, last;  // the DOT nodes edges into and out of a drawn graph attach to
};

// `model`'s nodes and edges into `out`, node ids prefixed by `prefix`; nested models as clusters (Keras's
// expand_nested: edges into a nested model go to its first node, edges out leave from its last).
Ends emit_graph(const Model& model, const PlotOptions& o, const std::string& prefix, const std::string& indent,
                int& clusters, std::string& out) {
  const auto& g = *model.state().graph;
  std::map<int, std::size_t> node_of_slot;  // a slot's producing step
  std::vector<Ends> ends(g.steps.size());
  for (std::size_t i = 0; i < g.steps.size(); ++i) {
    const auto& step = g.steps[i];
    for (std::size_t k = 0; k < std::max<std::size_t>(1, step.node->shapes.size()); ++k) {
      node_of_slot[step.slot + static_cast<int>(k)] = i;
    }
    if (const Model* inner = expandable(*step.node, o)) {
      const std::string id = fmt::format("m{}_", clusters++);
      out += fmt::format("{}subgraph \"cluster_{}\" {{\n{}  graph [label=\"{}\", style=dashed, labeljust=l];\n", indent,
                         escaped(id + inner->name()), indent, escaped(inner->name()));
      ends[i] = emit_graph(*inner, o, id, indent + "  ", clusters, out);
      out += indent + "}\n";
      continue;
    }
    const std::string id = fmt::format("{}n{}", prefix, i);
    ends[i] = {id, id};
    out += fmt::format("{}{} [label=<{}>];\n", indent, id, node_label(*step.node, o));
  }
  for (std::size_t i = 0; i < g.steps.size(); ++i) {
    for (int parent : g.steps[i].parents) {
      out += fmt::format("{}{} -> {};\n", indent, ends[node_of_slot.at(parent)].last, ends[i].first);
    }
  }
  if (g.steps.empty()) return {};
  return {ends.front().first, ends.back().last};
}

}  // namespace

std::string model_to_dot(const Model& model, const PlotOptions& o) {
  const auto& s = model.state();
  if (s.subclassed) {
    throw ValueError(fmt::format("model_to_dot: model '{}' is a subclassed model; it has no graph of layers to draw",
                                 model.name()));
  }
  if (!s.graph) {
    throw ValueError(fmt::format("model_to_dot: model '{}' is not built yet; give it an Input or call it on data "
                                 "first",
                                 model.name()));
  }
  if (o.rankdir != "TB" && o.rankdir != "LR" && o.rankdir != "BT" && o.rankdir != "RL") {
    throw ValueError(fmt::format("model_to_dot: rankdir must be \"TB\", \"LR\", \"BT\" or \"RL\", got \"{}\"", o.rankdir));
  }
  // Keras's graph and node settings: boxes of HTML tables without a border of their own, thick edges.
  std::string out = fmt::format("digraph \"{}\" {{\n  graph [rankdir={}, concentrate=true, dpi={}, splines=ortho];\n"
                                "  node [shape=plain, fontname=\"Helvetica\", margin=0];\n  edge [penwidth=2];\n",
                                escaped(model.name()), o.rankdir, o.dpi);
  int clusters = 0;
  emit_graph(model, o, "", "  ", clusters, out);
  return out + "}\n";
}

void plot_model(const Model& model, const std::string& to_file, const PlotOptions& options) {
  const std::string dot_text = model_to_dot(model, options);
  std::string ext = std::filesystem::path(to_file).extension().string();
  if (!ext.empty()) ext = ext.substr(1);
  if (ext.empty()) {
    throw ValueError(fmt::format("plot_model: '{}' has no extension to say the format (png, svg, pdf, dot...)", to_file));
  }
  if (ext == "dot") {
    core::write_file_atomically(to_file, dot_text, "plot_model");
    return;
  }
  for (char c : ext) {
    if (!std::isalnum(static_cast<unsigned char>(c))) throw ValueError(fmt::format("plot_model: odd extension '{}'", ext));
  }
  const std::string dot = find_dot();
  if (dot.empty()) {
    throw NotFoundError("plot_model: Graphviz's `dot` program was not found on PATH; install Graphviz (Debian: "
                        "apt-get install graphviz), or write the DOT text with a \".dot\" file name");
  }
  int in_pipe[2], out_pipe[2];
  if (::pipe(in_pipe) != 0 || ::pipe(out_pipe) != 0) throw InternalError("plot_model: pipe() failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  const std::string format = "-T" + ext;
  char* argv[] = {const_cast<char*>(dot.c_str()), const_cast<char*>(format.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, dot.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    throw InternalError(fmt::format("plot_model: could not start '{}': {}", dot, std::strerror(rc)));
  }
  // Feed the DOT from another thread while this one reads the drawing (neither pipe can fill up and block).
  // Graphviz may exit before reading it all (an unknown format): the write then fails with EPIPE, and SIGPIPE, which
  // would end the whole process, is blocked on the feeding thread and taken there if it came.
  std::thread feeder([fd = in_pipe[1], &dot_text] {
    sigset_t pipe_signal, previous;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
    bool broken = false;
    std::size_t at = 0;
    while (at < dot_text.size()) {
      const ssize_t n = ::write(fd, dot_text.data() + at, dot_text.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken = n < 0 && errno == EPIPE;
        break;
      }
      at += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (broken) {
      const timespec now{0, 0};
      sigtimedwait(&pipe_signal, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  });
  std::string image;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n > 0) image.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(out_pipe[0]);
  feeder.join();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || image.empty()) {
    throw InternalError(fmt::format("plot_model: '{} {}' failed (exit status {}); is '{}' a format Graphviz writes?",
                                    dot, format, WIFEXITED(status) ? WEXITSTATUS(status) : -1, ext));
  }
  core::write_file_atomically(to_file, image, "plot_model");
}

}  // namespace osprey::keras::utils
