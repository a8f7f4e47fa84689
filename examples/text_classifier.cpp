// A text classifier on a synthetic corpus with a known rule (issue 18): reviews of 4 to 20 tokens from a
// vocabulary of 60 ids (0 is padding): ids 1-10 are "good" words, 11-20 "bad" ones, the rest neutral; a review is
// positive when it has more good words than bad ones. Embedding(mask_zero) + Bidirectional LSTM + Dense, padded to
// 20 tokens; the last 20 % are the validation set. Exits 1 when validation accuracy is below 95 %.
//   build/release/examples/text_classifier
#include <iostream>
#include <random>

#include "osprey/osprey.h"

using namespace osprey;
using namespace osprey::keras;

int main() {
  constexpr int64_t kReviews = 2000, kLength = 20, kVocabulary = 60;
  std::mt19937 rng(11);
  std::vector<int32_t> ids;
  std::vector<float> labels;
  while (static_cast<int64_t>(labels.size()) < kReviews) {
    const int length = std::uniform_int_distribution<int>(4, kLength)(rng);
    int good = 0, bad = 0;
    std::vector<int32_t> review(kLength, 0);
    for (int t = 0; t < length; ++t) {
      const int id = std::uniform_int_distribution<int>(1, kVocabulary - 1)(rng);
      good += id <= 10;
      bad += id > 10 && id <= 20;
      review[static_cast<std::size_t>(t)] = id;
    }
    if (good == bad) continue;  // no ties: the rule decides every review
    ids.insert(ids.end(), review.begin(), review.end());
    labels.push_back(good > bad ? 1.f : 0.f);
  }
  const Tensor x = Tensor::from_vector(ids, {kReviews, kLength}), y = Tensor::from_vector(labels, {kReviews, 1});

  utils::set_random_seed(5);
  auto tokens = keras::Input({kLength}, {.name = "tokens", .dtype = DType::int32});
  auto h = layers::Embedding(kVocabulary, 16, {.mask_zero = true})(tokens);
  h = layers::Bidirectional(std::make_shared<layers::LSTM>(16))(h);
  auto out = layers::Dense(1, "sigmoid")(h);
  Model model(tokens, out, "text_classifier");
  model.summary();
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  const auto history = model.fit(x, y, {.epochs = 5, .batch_size = 32, .verbose = 2, .validation_split = 0.2});
  const double accuracy = history.history.at("val_accuracy").back();
  std::cout << "validation accuracy: " << accuracy << (accuracy >= 0.95 ? " (>= 0.95)" : " (below 0.95)") << "\n";
  return accuracy >= 0.95 ? 0 : 1;
}
