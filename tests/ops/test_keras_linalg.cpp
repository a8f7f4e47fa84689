// keras.ops.linalg against real Keras 3 (tests/keras/keras_linalg_reference.py wrote tests/data/keras_linalg.json):
// values and gradients of every case; then what the reference cannot show (batched LU, larger and rank-deficient
// matrices, the decompositions put back together) and the typed errors of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

// keras/ops.h first, then the whole API (see test_keras_ops.cpp).
#include "osprey/keras/ops.h"
#include "osprey/osprey.h"
#include "keras_cases.h"
#include "test_util.h"

using namespace osprey;
namespace ko = osprey::keras::ops;
using Ts = std::vector<Tensor>;
namespace keras_cases = osprey::testing::keras_cases;

namespace {

const nlohmann::json& keras_linalg_ref() { return keras_cases::reference("keras_linalg.json"); }

// The C++ spelling of each reference case (same names as keras_linalg_reference.py).
const keras_cases::Cases& cases() {
  static const keras_cases::Cases m = {
      {"det_inv", [](const Ts& i) { return Ts{ko::det(i[0]), ko::inv(i[0]), ko::det(i[1]), ko::inv(i[1])}; }},
      {"solve", [](const Ts& i) { return Ts{ko::solve(i[0], i[1]), ko::solve(i[0], i[2]), ko::solve(i[3], i[4])}; }},
      {"solve_triangular",
       [](const Ts& i) {
         return Ts{ko::solve_triangular(i[0], i[1], true), ko::solve_triangular(i[0], i[1]),
                   ko::solve_triangular(i[0], i[2], true)};
       }},
      {"cholesky", [](const Ts& i) { return Ts{ko::cholesky(i[0]), ko::cholesky(i[1], true)}; }},
      {"cholesky_inverse",
       [](const Ts& i) { return Ts{ko::cholesky_inverse(i[0]), ko::cholesky_inverse(i[1], true)}; }},
      {"slogdet",
       [](const Ts& i) {
         Ts out = ko::slogdet(i[0]);
         for (const Tensor& t : ko::slogdet(i[1])) out.push_back(t);
         return out;
       }},
      {"lu_factor",
       [](const Ts& i) {
         Ts out = ko::lu_factor(ko::stop_gradient(i[0]));
         for (const Tensor& t : ko::lu_factor(ko::stop_gradient(i[1]))) out.push_back(t);
         return out;
       }},
      {"eigh",
       [](const Ts& i) {
         const Ts e = ko::eigh(i[0]);
         return Ts{e[0], ko::abs(e[1]), ko::eigh(i[1])[0]};
       }},
      {"svd_reduced",
       [](const Ts& i) {
         const Ts t = ko::svd(i[0], false), w = ko::svd(i[1], false);
         return Ts{t[1], ko::abs(t[0]), ko::abs(t[2]), ko::abs(w[0]), ko::abs(w[2])};
       }},
      {"svd_full",
       [](const Ts& i) {
         const Ts t = ko::svd(i[0]), w = ko::svd(i[1]);
         return Ts{ko::abs(t[0]), ko::abs(t[2]), ko::abs(w[0]), ko::abs(w[2])};
       }},
      {"svd_values", [](const Ts& i) { return Ts{ko::svd(i[0], true, false)[0], ko::svd(i[1], true, false)[0]}; }},
      {"pinv_lstsq",
       [](const Ts& i) { return Ts{ko::pinv(i[0]), ko::lstsq(i[0], i[1]), ko::lstsq(i[0], i[2]), ko::pinv(i[3])}; }},
      {"matrix_rank_power",
       [](const Ts& i) {
         return Ts{ko::matrix_rank(i[0]), ko::matrix_rank(i[1]), ko::matrix_power(i[1], 3), ko::matrix_power(i[1], -2),
                   ko::matrix_power(i[1], 1)};
       }},
      {"matrix_norms",
       [](const Ts& i) {
         return Ts{ko::norm(i[0], 2.0), ko::norm(i[0], -2.0), ko::norm(i[0], std::string("nuc")),
                   ko::norm(i[0], std::string("fro")), ko::norm(i[1], 2.0, {1, 2}, true),
                   ko::norm(i[1], std::string("nuc"), {1, 2})};
       }},
      {"qr",
       [](const Ts& i) {
         Ts out;
         for (const Ts& f : {ko::qr(i[0]), ko::qr(i[1]), ko::qr(i[2]), ko::qr(ko::stop_gradient(i[0]), "complete")}) {
           out.insert(out.end(), f.begin(), f.end());
         }
         return out;
       }},
  };
  return m;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return ops::reduce_axes(ops::abs(ops::sub(a, b)), ops::ReduceOp::max, {}).item();
}

Tensor uniform(const Shape& s, uint64_t seed) {
  random::set_seed(seed);
  return random::uniform(s, -1.0, 1.0);
}

// The first p columns (last axis) or rows (second to last) of x.
Tensor leading(const Tensor& x, int64_t p, bool rows) {
  const auto d = x.shape().dims();
  std::vector<int64_t> size(d.begin(), d.end());
  size[size.size() - (rows ? 2 : 1)] = p;
  return ko::slice(x, std::vector<int64_t>(size.size(), 0), size);
}

}  // namespace

// Float32 decompositions against TensorFlow's (Eigen's float32 kernels, where Osprey's compute in double and round
// once): gradients through inverses and eigenvector gaps amplify the last bits, hence 1e-4.
TEST(KerasLinalg, EveryCaseMatchesKeras) { keras_cases::check_every_case(keras_linalg_ref(), cases(), 1e-4, "keras_linalg.json"); }

TEST(KerasLinalg, DecompositionsPutBackTogether) {
  // Batched LU (TensorFlow's Keras backend refuses a batch): x[i] = (L·U)[pivots[i]].
  const Tensor x = uniform({3, 6, 6}, 7);
  const Ts lu = ko::lu_factor(x);
  ASSERT_EQ(lu[1].dtype(), DType::int32);
  const Tensor l = ko::add(ko::tril(lu[0], -1), ko::eye(6)), u = ko::triu(lu[0]);
  const Tensor rebuilt = ko::take_along_axis(ko::matmul(l, u), ko::expand_dims(lu[1], -1), -2);
  EXPECT_LT(max_abs_diff(rebuilt, x), 1e-5);

  // A 40 x 40 inverse and solve.
  const Tensor a = ko::add(uniform({40, 40}, 11), ko::multiply(ko::eye(40), 8.0));
  EXPECT_LT(max_abs_diff(ko::matmul(a, ko::inv(a)), ko::eye(40)), 1e-5);
  const Tensor b = uniform({40, 3}, 12);
  EXPECT_LT(max_abs_diff(ko::matmul(a, ko::solve(a, b)), b), 1e-5);

  // SVDs of tall, wide, batched and rank-deficient matrices: u·diag(s)·vh, orthonormal u and vh.
  for (const Shape& s : {Shape{7, 4}, Shape{4, 7}, Shape{2, 5, 5}}) {
    for (bool full : {false, true}) {
      SCOPED_TRACE(s.to_string() + (full ? " full" : " reduced"));
      const Tensor m = uniform(s, 13);
      const Ts usv = ko::svd(m, full);
      const int64_t p = std::min(s[-2], s[-1]);
      const Tensor u1 = leading(usv[0], p, false), vh1 = leading(usv[2], p, true);
      EXPECT_LT(max_abs_diff(ko::matmul(ko::multiply(u1, ko::expand_dims(usv[1], -2)), vh1), m), 1e-5);
      const Tensor& uu = usv[0];
      EXPECT_LT(max_abs_diff(ko::matmul(ko::swapaxes(uu, -1, -2), uu), ko::eye(uu.shape()[-1])), 1e-5);
      EXPECT_LT(max_abs_diff(ko::matmul(usv[2], ko::swapaxes(usv[2], -1, -2)), ko::eye(usv[2].shape()[-2])), 1e-5);
    }
  }
  const Tensor rank1 = ko::matmul(uniform({5, 1}, 14), uniform({1, 3}, 15));
  const Ts r1 = ko::svd(rank1);
  EXPECT_LT(max_abs_diff(ko::matmul(ko::swapaxes(r1[0], 0, 1), r1[0]), ko::eye(5)), 1e-5);
  EXPECT_EQ(ko::matrix_rank(rank1).item(), 1.0);
  EXPECT_EQ(ko::matrix_rank(Tensor::zeros({3, 3})).item(), 0.0);

  // eigh: v·diag(w)·vᵀ is the symmetric matrix built from the lower triangle.
  const Tensor g = uniform({6, 6}, 16);
  const Tensor sym = ko::add(g, ko::swapaxes(g, 0, 1));
  const Ts e = ko::eigh(ko::add(ko::tril(sym), ko::multiply(ko::triu(uniform({6, 6}, 17), 1), 100.0)));
  EXPECT_LT(max_abs_diff(ko::matmul(ko::multiply(e[1], ko::expand_dims(e[0], 0)), ko::swapaxes(e[1], 0, 1)), sym), 1e-5);
  const std::vector<float> w = e[0].to_vector<float>();
  EXPECT_TRUE(std::is_sorted(w.begin(), w.end()));

  // QR, complete: q orthogonal (m x m), q·r = x.
  const Tensor tall = uniform({6, 3}, 19);
  const Ts qr = ko::qr(tall, "complete");
  EXPECT_EQ(qr[0].shape(), Shape({6, 6}));
  EXPECT_LT(max_abs_diff(ko::matmul(qr[0], qr[1]), tall), 1e-5);
  EXPECT_LT(max_abs_diff(ko::matmul(ko::swapaxes(qr[0], 0, 1), qr[0]), ko::eye(6)), 1e-5);

  // Singular and empty matrices.
  const Tensor singular = Tensor::from_vector(std::vector<float>{1, 2, 2, 4}, {2, 2});
  EXPECT_EQ(ko::det(singular).item(), 0.0);
  const Ts sl = ko::slogdet(singular);
  EXPECT_EQ(sl[0].item(), 0.0);
  EXPECT_TRUE(std::isinf(sl[1].item()) && sl[1].item() < 0);
  EXPECT_EQ(ko::det(Tensor::zeros({0, 0})).item(), 1.0);
  EXPECT_EQ(ko::inv(Tensor::zeros({0, 0})).shape(), Shape({0, 0}));
  EXPECT_EQ(ko::det(Tensor::zeros({0, 3, 3})).shape(), Shape({0}));
  EXPECT_EQ(ko::inv(Tensor::zeros({0, 3, 3})).shape(), Shape({0, 3, 3}));
  EXPECT_EQ(ko::pinv(Tensor::zeros({0, 3})).shape(), Shape({3, 0}));
  EXPECT_EQ(ko::cholesky(Tensor::zeros({0, 0})).shape(), Shape({0, 0}));
  // Integers compute in float32; float64 comes back as float64.
  EXPECT_EQ(ko::det(ops::cast(ko::eye(3), DType::int32)).dtype(), DType::float32);
  EXPECT_EQ(ko::inv(ops::cast(ko::eye(3), DType::float64)).dtype(), DType::float64);
}

TEST(KerasLinalg, BadInputIsATypedError) {
  const Tensor v = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  const Tensor rect = Tensor::zeros({2, 3});
  EXPECT_THROW(ko::det(v), ValueError);
  EXPECT_THROW(ko::inv(rect), ValueError);
  EXPECT_THROW(ko::cholesky(rect), ValueError);
  EXPECT_THROW(ko::svd(v), ValueError);
  EXPECT_THROW(ko::solve(ko::eye(3), Tensor::zeros({4, 1})), ValueError);
  EXPECT_THROW(ko::solve(ko::eye(3), Tensor::scalar(1.0)), ValueError);
  EXPECT_THROW(ko::solve(Tensor::zeros({2, 3, 3}), Tensor::zeros({3})), ValueError);
  EXPECT_THROW(ko::matrix_power(ko::eye(2), std::numeric_limits<int64_t>::min()), ValueError);
  EXPECT_THROW(ko::lstsq(ko::eye(3), Tensor::zeros({4})), ValueError);
  EXPECT_THROW(ko::lstsq(Tensor::zeros({2, 3, 3}), Tensor::zeros({3})), ValueError);
  EXPECT_THROW(ko::norm(ko::eye(3), std::string("nuc"), 0), ValueError);
  EXPECT_THROW(ko::norm(ko::eye(3), 3.0, {0, 1}), ValueError);
  // Singular systems (an exactly zero pivot, TensorFlow's test) and a matrix that is not positive definite.
  const Tensor singular = Tensor::from_vector(std::vector<float>{1, 2, 2, 4}, {2, 2});
  EXPECT_THROW(ko::inv(singular), InvalidArgumentError);
  EXPECT_THROW(ko::solve(singular, Tensor::zeros({2})), InvalidArgumentError);
  try {
    ko::cholesky(ko::multiply(ko::eye(2), -1.0));
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("not symmetric positive definite"), std::string::npos) << e.what();
  }
  // The SVD's vectors have no gradient with full_matrices when the sides differ by more than one (TensorFlow's).
  const Tensor wide = uniform({2, 5}, 18);
  GradientTape tape;
  tape.watch(wide);
  const Tensor loss = ops::reduce_sum(ko::svd(wide)[0]);
  EXPECT_THROW(tape.gradient(loss, {wide}), NotImplementedError);
  // QR: an unknown mode; the gradient of a tall matrix's complete QR (TensorFlow's NotImplementedError too).
  EXPECT_THROW(ko::qr(ko::eye(3), "r"), ValueError);
  const Tensor tall = uniform({4, 2}, 20);
  GradientTape tape2;
  tape2.watch(tall);
  const Tensor qr_loss = ops::reduce_sum(ko::qr(tall, "complete")[0]);
  EXPECT_THROW(tape2.gradient(qr_loss, {tall}), NotImplementedError);
}
