// keras::utils::model_to_dot and plot_model: the graph's nodes and edges, the labels Keras's options add, and the
// drawing by Graphviz's `dot` (installed by scripts/bootstrap.sh; without it, the NotFoundError that says so).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using ::testing::HasSubstr;
namespace layers = osprey::keras::layers;
namespace utils = osprey::keras::utils;

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

bool have_dot() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    if (::access((std::string(dir) + "/dot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

TEST(PlotModel, TheGraphAsDotWithKerasLabels) {
  auto a = keras::Input({3}, {.name = "a"});
  auto b = keras::Input({2}, {.name = "b"});
  auto h = layers::Concatenate(-1, "joined")({a, b});
  auto out = layers::Dense(4, "relu", {.name = "dense_out"})(h);
  keras::Model m({a, b}, {out}, "two_inputs");
  const std::string dot = utils::model_to_dot(m, {.show_shapes = true, .show_dtype = true, .rankdir = "LR"});
  EXPECT_THAT(dot, HasSubstr("digraph \"two_inputs\""));
  EXPECT_THAT(dot, HasSubstr("rankdir=LR"));
  // Keras 3's HTML-table boxes (model_visualization.make_layer_label): a title row, then a cell per option.
  const std::string title = "<tr><td colspan=\"3\" bgcolor=\"black\"><font point-size=\"16\" color=\"white\">";
  EXPECT_THAT(dot, HasSubstr(title + "<b>a</b> (InputLayer)</font></td></tr><tr><td bgcolor=\"white\"><font "
                             "point-size=\"14\">Output shape: <b>(None, 3)</b></font></td>"));
  EXPECT_THAT(dot, HasSubstr(title + "<b>joined</b> (Concatenate)</font></td></tr><tr><td bgcolor=\"white\"><font "
                             "point-size=\"14\">Input shape: <b>[(None, 3), (None, 2)]</b></font></td>"
                             "<td bgcolor=\"white\"><font point-size=\"14\">Output shape: <b>(None, 5)</b></font></td>"
                             "<td bgcolor=\"white\"><font point-size=\"14\">Output dtype: <b>float32</b></font></td>"
                             "</tr></table>>"));
  EXPECT_THAT(dot, HasSubstr("Input shape: <b>(None, 5)</b></font></td><td bgcolor=\"white\"><font "
                             "point-size=\"14\">Output shape: <b>(None, 4)</b>"));
  EXPECT_EQ(count(dot, " -> "), 3) << dot;  // a -> joined, b -> joined, joined -> dense_out
  EXPECT_EQ(count(dot, "[label=<<table"), 4) << dot;
  const std::string plain = utils::model_to_dot(m, {.show_layer_names = false});
  EXPECT_THAT(plain, Not(HasSubstr("dense_out")));
  EXPECT_THAT(plain, HasSubstr("<td colspan=\"1\" bgcolor=\"black\"><font point-size=\"16\" color=\"white\"><b>Dense</b>"
                               "</font></td></tr></table>"));
  // Activations, and Trainable / Non-trainable for layers with weights only; names are escaped for HTML.
  auto x = keras::Input({2}, {.name = "x<1>"});
  auto frozen = std::make_shared<layers::Dense>(2, "tanh", layers::DenseOptions{.name = "frozen"});
  keras::Model t(x, layers::Dense(1, "", {.name = "head"})(layers::Activation("relu")((*frozen)(x))));
  frozen->trainable = false;
  const std::string flags = utils::model_to_dot(t, {.show_layer_activations = true, .show_trainable = true});
  EXPECT_THAT(flags, HasSubstr("<b>x&lt;1&gt;</b> (InputLayer)</font></td></tr></table>"));
  EXPECT_THAT(flags, HasSubstr("Activation: <b>tanh</b></font></td></tr><tr><td bgcolor=\"firebrick\"><font "
                               "point-size=\"14\" color=\"white\"><b>Non-trainable</b></font></td></tr></table>"));
  EXPECT_THAT(flags, HasSubstr("(Activation)</font></td></tr><tr><td bgcolor=\"white\" colspan=\"1\"><font "
                               "point-size=\"14\">Activation: <b>relu</b></font></td></tr></table>"));
  EXPECT_THAT(flags, HasSubstr("<b>head</b> (Dense)</font></td></tr><tr><td bgcolor=\"white\" colspan=\"1\"><font "
                               "point-size=\"14\">Activation: <b>linear</b></font></td></tr><tr><td "
                               "bgcolor=\"forestgreen\"><font point-size=\"14\" color=\"white\"><b>Trainable</b>"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::model_to_dot(m, {.rankdir = "UP"}); }),
              HasSubstr("rankdir must be"));
}

TEST(PlotModel, SequentialOnceBuilt) {
  keras::Sequential built({layers::Input({8}), layers::Dense(4), layers::Dense(1)});
  EXPECT_EQ(count(utils::model_to_dot(built), " -> "), 2);
  keras::Sequential unbuilt({layers::Dense(4)});
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::model_to_dot(unbuilt); }), HasSubstr("not built yet"));
}

TEST(PlotModel, DrawsWithGraphvizOrSaysItIsMissing) {
  keras::Sequential m({layers::Input({8}), layers::Dense(4, "relu"), layers::Dense(1)});
  const auto dir = std::filesystem::temp_directory_path() / ("osprey_plot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto dot_file = (dir / "m.dot").string();
  utils::plot_model(m, dot_file);
  std::ifstream in(dot_file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, utils::model_to_dot(m));
  const auto png = (dir / "m.png").string();
  if (have_dot()) {
    utils::plot_model(m, png, {.show_shapes = true});
    std::ifstream img(png, std::ios::binary);
    char magic[8] = {};
    img.read(magic, 8);
    EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_THROW(utils::plot_model(m, (dir / "m.nosuchformat").string()), InternalError);
    EXPECT_FALSE(std::filesystem::exists(dir / "m.nosuchformat")) << "a failed drawing leaves no file";
  } else {
    EXPECT_THAT(osprey::testing::error_of<NotFoundError>([&] { utils::plot_model(m, png); }),
                HasSubstr("apt-get install graphviz"));
  }
  EXPECT_THROW(utils::plot_model(m, (dir / "noextension").string()), ValueError);
  std::filesystem::remove_all(dir);
}

// Graphviz refuses an unknown format before it reads its input: with a DOT text larger than a pipe holds, the
// writer meets a closed pipe, which must be an InternalError (not SIGPIPE ending the process).
TEST(PlotModel, AGraphvizThatStopsEarlyIsAnErrorNotASignal) {
  if (!have_dot()) GTEST_SKIP() << "Graphviz's dot is not installed";
  std::vector<keras::LayerRef> stack{layers::Input({4})};
  for (int i = 0; i < 800; ++i) stack.push_back(layers::Dense(4, "relu", {.name = "a_long_layer_name_" + std::to_string(i)}));
  keras::Sequential m(stack);
  ASSERT_GT(utils::model_to_dot(m).size(), std::size_t{1} << 17);
  const auto dir = std::filesystem::temp_directory_path() / ("osprey_plot_pipe_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int i = 0; i < 3; ++i) EXPECT_THROW(utils::plot_model(m, (dir / "m.nosuchformat").string()), InternalError);
  EXPECT_FALSE(std::filesystem::exists(dir / "m.nosuchformat"));
  std::filesystem::remove_all(dir);
}

// expand_nested: a functional model inside a Sequential inside the outer model, drawn as nested clusters, with the
// edges into and out of each nested model attached to its first and last nodes (Keras's drawing).
TEST(PlotModel, ExpandNestedDrawsNestedModelsAsClusters) {
  auto ei = keras::Input({4}, {.name = "enc_in"});
  auto encoder = std::make_shared<keras::Model>(keras::KerasTensors{ei},
                                                keras::KerasTensors{layers::Dense(3, "relu", {.name = "enc_dense"})(ei)},
                                                "encoder");
  auto block = std::make_shared<keras::Sequential>(
      std::vector<keras::LayerRef>{layers::Input({4}), encoder, layers::Dense(2, "", {.name = "block_dense"})}, "block");
  auto x = keras::Input({4}, {.name = "x"});
  keras::Model outer(x, layers::Dense(1, "", {.name = "head"})((*block)(x)), "outer");

  const std::string flat = utils::model_to_dot(outer);
  EXPECT_THAT(flat, HasSubstr("<b>block</b> (Sequential)"));
  EXPECT_THAT(flat, Not(HasSubstr("subgraph")));
  EXPECT_EQ(count(flat, " -> "), 2) << flat;  // x -> block -> head

  const std::string dot = utils::model_to_dot(outer, {.expand_nested = true});
  EXPECT_EQ(count(dot, "subgraph \"cluster_"), 2) << dot;
  EXPECT_THAT(dot, HasSubstr("label=\"block\""));
  EXPECT_THAT(dot, HasSubstr("label=\"encoder\""));
  EXPECT_THAT(dot, Not(HasSubstr("<b>block</b> (Sequential)")));
  EXPECT_THAT(dot, HasSubstr("<b>enc_dense</b> (Dense)"));
  EXPECT_THAT(dot, HasSubstr("<b>block_dense</b> (Dense)"));
  // Boxes: x, head; block's input, block_dense; encoder's enc_in, enc_dense.
  EXPECT_EQ(count(dot, "[label=") - count(dot, "graph [label="), 6) << dot;
  // Edges: x -> block's input -> enc_in -> enc_dense -> block_dense -> head.
  EXPECT_EQ(count(dot, " -> "), 5) << dot;
  if (have_dot()) {
    const auto dir = std::filesystem::temp_directory_path() / ("osprey_plot_nested_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    utils::plot_model(outer, (dir / "nested.svg").string(), {.show_shapes = true, .expand_nested = true});
    std::ifstream svg(dir / "nested.svg");
    const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr("enc_dense"));  // Graphviz took the clusters
    EXPECT_THAT(text, HasSubstr("encoder"));
    std::filesystem::remove_all(dir);
  }
}
