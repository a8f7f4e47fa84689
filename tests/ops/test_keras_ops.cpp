// keras::ops against real Keras 3 (tests/keras/keras_ops_reference.py wrote tests/data/keras_ops.json): every
// case's outputs (values, shape, dtype) and the gradients of sum(output · cotangent) with respect to its float
// inputs; then the typed errors of bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

// keras/ops.h first, then the whole API: the Keras headers name Osprey's ops as osprey::ops, never as ops::
// (which inside namespace keras would be keras::ops once this header is in).
#include "osprey/keras/ops.h"
#include "osprey/osprey.h"
#include "keras_cases.h"
#include "test_util.h"

using namespace osprey;
namespace ko = osprey::keras::ops;
using json = nlohmann::json;
using Ts = std::vector<Tensor>;
namespace keras_cases = osprey::testing::keras_cases;
using keras_cases::tensor_of;

namespace {

const nlohmann::json& keras_ops_ref() { return keras_cases::reference("keras_ops.json"); }

// The C++ spelling of each reference case (same names as keras_ops_reference.py).
const std::map<std::string, std::function<Ts(const Ts&)>>& cases() {
  static const std::map<std::string, std::function<Ts(const Ts&)>> m = {
      {"add_broadcast", [](const Ts& i) { return Ts{ko::add(i[0], i[1])}; }},
      {"subtract_broadcast", [](const Ts& i) { return Ts{ko::subtract(i[0], i[1])}; }},
      {"multiply_broadcast", [](const Ts& i) { return Ts{ko::multiply(i[0], i[1])}; }},
      {"divide_broadcast", [](const Ts& i) { return Ts{ko::divide(i[0], i[1])}; }},
      {"maximum_outer", [](const Ts& i) { return Ts{ko::maximum(i[0], i[1])}; }},
      {"minimum_row", [](const Ts& i) { return Ts{ko::minimum(i[0], i[1])}; }},
      {"power", [](const Ts& i) { return Ts{ko::power(i[0], i[1])}; }},
      {"where", [](const Ts& i) { return Ts{ko::where(i[0], i[1], i[2])}; }},
      {"clip", [](const Ts& i) { return Ts{ko::clip(i[0], -1.0, 1.5)}; }},
      {"sum_axis1_keepdims", [](const Ts& i) { return Ts{ko::sum(i[0], 1, true)}; }},
      {"sum_axes02", [](const Ts& i) { return Ts{ko::sum(i[0], {0, 2})}; }},
      {"sum_all", [](const Ts& i) { return Ts{ko::sum(i[0])}; }},
      {"mean_last", [](const Ts& i) { return Ts{ko::mean(i[0], -1)}; }},
      {"max_ties", [](const Ts& i) { return Ts{ko::max(i[0], 1)}; }},
      {"min_axis0", [](const Ts& i) { return Ts{ko::min(i[0], 0)}; }},
      {"prod_with_zero", [](const Ts& i) { return Ts{ko::prod(i[0], 1)}; }},
      {"logsumexp_last", [](const Ts& i) { return Ts{ko::logsumexp(i[0], -1)}; }},
      {"var_axis0", [](const Ts& i) { return Ts{ko::var(i[0], 0)}; }},
      {"std_keepdims", [](const Ts& i) { return Ts{ko::std(i[0], {0, 1}, true)}; }},
      {"argmax_axis1", [](const Ts& i) { return Ts{ko::argmax(i[0], 1)}; }},
      {"argmin_axis0", [](const Ts& i) { return Ts{ko::argmin(i[0], 0)}; }},
      {"argmax_flat", [](const Ts& i) { return Ts{ko::argmax(i[0])}; }},
      {"any_axis1", [](const Ts& i) { return Ts{ko::any(i[0], 1)}; }},
      {"all_axis0", [](const Ts& i) { return Ts{ko::all(i[0], 0)}; }},
      {"cumsum_axis1", [](const Ts& i) { return Ts{ko::cumsum(i[0], 1)}; }},
      {"cumprod_axis0", [](const Ts& i) { return Ts{ko::cumprod(i[0], 0)}; }},
      {"cumsum_flat_int", [](const Ts& i) { return Ts{ko::cumsum(i[0])}; }},
      {"one_hot", [](const Ts& i) { return Ts{ko::one_hot(i[0], 4)}; }},
      {"one_hot_axis0", [](const Ts& i) { return Ts{ko::one_hot(i[0], 3, 0)}; }},
      {"take_axis1", [](const Ts& i) { return Ts{ko::take(i[0], i[1], 1)}; }},
      {"take_flat", [](const Ts& i) { return Ts{ko::take(i[0], i[1])}; }},
      {"take_along_axis", [](const Ts& i) { return Ts{ko::take_along_axis(i[0], i[1], 1)}; }},
      {"top_k", [](const Ts& i) { return ko::top_k(i[0], 2); }},
      {"sort_axis0", [](const Ts& i) { return Ts{ko::sort(i[0], 0)}; }},
      {"argsort_last", [](const Ts& i) { return Ts{ko::argsort(i[0], -1)}; }},
      {"einsum_bmm", [](const Ts& i) { return Ts{ko::einsum("bij,bjk->bik", i)}; }},
      {"einsum_attention", [](const Ts& i) { return Ts{ko::einsum("bhqd,bhkd->bhqk", i)}; }},
      {"einsum_matvec", [](const Ts& i) { return Ts{ko::einsum("ij,j->i", i)}; }},
      {"einsum_transpose_sum", [](const Ts& i) { return Ts{ko::einsum("ijk->ki", i)}; }},
      {"einsum_outer_implicit", [](const Ts& i) { return Ts{ko::einsum("i,j", i)}; }},
      {"matmul_broadcast", [](const Ts& i) { return Ts{ko::matmul(i[0], i[1])}; }},
      {"matmul_vector", [](const Ts& i) { return Ts{ko::matmul(i[0], i[1])}; }},
      {"matmul_int32_in_float32", [](const Ts& i) { return Ts{ko::matmul(i[0], i[1]), ko::matmul(i[2], i[3])}; }},
      {"stack_axis1", [](const Ts& i) { return Ts{ko::stack({i[0], i[1]}, 1)}; }},
      {"concatenate_last", [](const Ts& i) { return Ts{ko::concatenate({i[0], i[1]}, -1)}; }},
      {"split_sections", [](const Ts& i) { return ko::split(i[0], int64_t{3}, 1); }},
      {"split_indices", [](const Ts& i) { return ko::split(i[0], std::vector<int64_t>{1, 3}, 0); }},
      {"equal_int", [](const Ts& i) { return Ts{ko::equal(i[0], i[1])}; }},
      {"less_float", [](const Ts& i) { return Ts{ko::less(i[0], i[1])}; }},
      {"greater_equal_scalar", [](const Ts& i) { return Ts{ko::greater_equal(i[0], 0.25)}; }},
      {"logical_xor", [](const Ts& i) { return Ts{ko::logical_xor(i[0], i[1])}; }},
      {"expand_squeeze", [](const Ts& i) { return Ts{ko::squeeze(ko::expand_dims(i[0], 1), 1)}; }},
      {"transpose_default", [](const Ts& i) { return Ts{ko::transpose(i[0])}; }},
      {"reshape_infer", [](const Ts& i) { return Ts{ko::reshape(i[0], {-1, 6})}; }},
      {"int_plus_half", [](const Ts& i) { return Ts{ko::add(i[0], 0.5)}; }},
      {"int_times_two", [](const Ts& i) { return Ts{ko::multiply(i[0], 2)}; }},
      {"mean_int", [](const Ts& i) { return Ts{ko::mean(i[0], 0)}; }},
      {"broadcast_to", [](const Ts& i) { return Ts{ko::broadcast_to(i[0], {2, 3, 4})}; }},
      {"slice", [](const Ts& i) { return Ts{ko::slice(i[0], {1, 0, 2}, {2, 3, 2})}; }},
      {"abs_sign", [](const Ts& i) { return Ts{ko::multiply(ko::abs(i[0]), ko::sign(i[0]))}; }},
      {"sin_cos_tan", [](const Ts& i) { return Ts{ko::sin(i[0]), ko::cos(i[0]), ko::tan(i[0])}; }},
      {"inverse_trig", [](const Ts& i) { return Ts{ko::arcsin(i[0]), ko::arccos(i[0]), ko::arctan(i[0])}; }},
      {"hyperbolic", [](const Ts& i) { return Ts{ko::sinh(i[0]), ko::cosh(i[0]), ko::tanh(i[0]), ko::arcsinh(i[0])}; }},
      {"arccosh", [](const Ts& i) { return Ts{ko::arccosh(i[0])}; }},
      {"arctanh", [](const Ts& i) { return Ts{ko::arctanh(i[0])}; }},
      {"floor_ceil", [](const Ts& i) { return Ts{ko::floor(i[0]), ko::ceil(i[0])}; }},
      {"round_halves", [](const Ts& i) { return Ts{ko::round(i[0])}; }},
      {"round_decimals", [](const Ts& i) { return Ts{ko::round(i[0], 2)}; }},
      {"round_int", [](const Ts& i) { return Ts{ko::round(i[0])}; }},
      {"round_int_negative_decimals", [](const Ts& i) { return Ts{ko::round(i[0], -1)}; }},
      {"log1p_expm1", [](const Ts& i) { return Ts{ko::log1p(i[0]), ko::expm1(i[0])}; }},
      {"log2_log10_reciprocal", [](const Ts& i) { return Ts{ko::log2(i[0]), ko::log10(i[0]), ko::reciprocal(i[0])}; }},
      {"sin_int", [](const Ts& i) { return Ts{ko::sin(i[0])}; }},
      {"floor_int", [](const Ts& i) { return Ts{ko::floor(i[0])}; }},
      {"negative_int", [](const Ts& i) { return Ts{ko::negative(i[0])}; }},
      {"pad_constant", [](const Ts& i) { return Ts{ko::pad(i[0], {{1, 2}, {0, 1}}, "constant", 1.5)}; }},
      {"pad_reflect", [](const Ts& i) { return Ts{ko::pad(i[0], {{2, 1}, {1, 3}}, "reflect")}; }},
      {"pad_symmetric", [](const Ts& i) { return Ts{ko::pad(i[0], {{0, 3}, {2, 2}, {1, 0}}, "symmetric")}; }},
      {"pad_int", [](const Ts& i) { return Ts{ko::pad(i[0], {{1, 1}, {2, 0}})}; }},
      {"tile", [](const Ts& i) { return Ts{ko::tile(i[0], {2, 1, 3})}; }},
      {"tile_short_repeats", [](const Ts& i) { return Ts{ko::tile(i[0], {2})}; }},
      {"repeat_flat", [](const Ts& i) { return Ts{ko::repeat(i[0], 2)}; }},
      {"repeat_per_element", [](const Ts& i) { return Ts{ko::repeat(i[0], std::vector<int64_t>{1, 0, 3}, 1)}; }},
      {"arctan2", [](const Ts& i) { return Ts{ko::arctan2(i[0], i[1])}; }},
      {"arctan2_axes", [](const Ts& i) { return Ts{ko::arctan2(i[0], i[1])}; }},
      {"arctan2_origins",
       [](const Ts& i) { return Ts{ko::arctan2(ko::stop_gradient(i[0]), ko::stop_gradient(i[1]))}; }},
      {"hypot", [](const Ts& i) { return Ts{ko::hypot(i[0], i[1])}; }},
      {"activations",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::relu(x), ko::relu6(ko::multiply(x, 4.0)), ko::sigmoid(x), ko::softplus(x), ko::softsign(x),
                   ko::silu(x), ko::selu(x), ko::elu(x), ko::leaky_relu(x)};
       }},
      {"activations_parametric",
       [](const Ts& i) {
         return Ts{ko::elu(i[0], 0.5), ko::leaky_relu(i[0], 0.1), ko::hard_sigmoid(i[0]), ko::hard_silu(i[0])};
       }},
      {"gelu_both", [](const Ts& i) { return Ts{ko::gelu(i[0]), ko::gelu(i[0], false)}; }},
      {"softmax_axes",
       [](const Ts& i) { return Ts{ko::softmax(i[0]), ko::softmax(i[0], 1), ko::softmax(i[0], 0)}; }},
      {"log_softmax", [](const Ts& i) { return Ts{ko::log_softmax(i[0]), ko::log_softmax(i[0], 0)}; }},
      {"moments", [](const Ts& i) { return ko::moments(i[0], {0, 2}); }},
      {"moments_keepdims", [](const Ts& i) { return ko::moments(i[0], {1}, true); }},
      {"normalize", [](const Ts& i) { return Ts{ko::normalize(i[0]), ko::normalize(i[0], 0, 1)}; }},
      {"norm_vector",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::norm(x, std::nullopt, 1), ko::norm(x, 1.0, 1), ko::norm(x, INFINITY, 0),
                   ko::norm(x, -INFINITY, 1, true), ko::norm(x, 3.0, -1)};
       }},
      {"norm_zero_count", [](const Ts& i) { return Ts{ko::norm(i[0], 0.0, 0)}; }},
      {"norm_matrix",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::norm(x), ko::norm(x, 1.0, {0, 1}), ko::norm(x, INFINITY, {0, 1}), ko::norm(x, -1.0, {0, 1}),
                   ko::norm(x, -INFINITY, {1, 0})};
       }},
      {"norm_batched_matrix",
       [](const Ts& i) { return Ts{ko::norm(i[0], 1.0, {2, 1}), ko::norm(i[0], std::nullopt, {0, 2}, true)}; }},
      {"norm_int", [](const Ts& i) { return Ts{ko::norm(i[0], std::nullopt, 0)}; }},
      {"conv2d_same_strided", [](const Ts& i) { return Ts{ko::conv(i[0], i[1], {2}, "same")}; }},
      {"conv1d_dilated", [](const Ts& i) { return Ts{ko::conv(i[0], i[1], {1}, "valid", "channels_last", {2})}; }},
      {"conv3d_valid", [](const Ts& i) { return Ts{ko::conv(i[0], i[1], {1, 2, 1})}; }},
      {"conv2d_grouped", [](const Ts& i) { return Ts{ko::conv(i[0], i[1], {1}, "same")}; }},
      {"conv2d_channels_first", [](const Ts& i) { return Ts{ko::conv(i[0], i[1], {1}, "same", "channels_first")}; }},
      {"depthwise_conv", [](const Ts& i) { return Ts{ko::depthwise_conv(i[0], i[1], {1}, "same")}; }},
      {"max_pool_same", [](const Ts& i) { return Ts{ko::max_pool(i[0], {3}, std::vector<int64_t>{2}, "same")}; }},
      {"max_pool_1d", [](const Ts& i) { return Ts{ko::max_pool(i[0], {2})}; }},
      {"average_pool_same",
       [](const Ts& i) { return Ts{ko::average_pool(i[0], {2, 3}, std::vector<int64_t>{2, 1}, "same")}; }},
      {"binary_crossentropy_probs", [](const Ts& i) { return Ts{ko::binary_crossentropy(i[0], i[1])}; }},
      {"binary_crossentropy_logits", [](const Ts& i) { return Ts{ko::binary_crossentropy(i[0], i[1], true)}; }},
      {"categorical_crossentropy_probs", [](const Ts& i) { return Ts{ko::categorical_crossentropy(i[0], i[1])}; }},
      {"categorical_crossentropy_logits_axis1",
       [](const Ts& i) { return Ts{ko::categorical_crossentropy(i[0], i[1], true, 1)}; }},
      {"sparse_categorical_crossentropy_probs",
       [](const Ts& i) { return Ts{ko::sparse_categorical_crossentropy(i[0], i[1])}; }},
      {"sparse_categorical_crossentropy_logits",
       [](const Ts& i) { return Ts{ko::sparse_categorical_crossentropy(i[0], i[1], true)}; }},
      {"eye_identity",
       [](const Ts&) { return Ts{ko::eye(3, 4, 1), ko::eye(3, std::nullopt, -1, DType::int32), ko::identity(2)}; }},
      {"full_linspace",
       [](const Ts&) {
         return Ts{ko::full({2, 3}, 1.5), ko::full({2}, 7), ko::linspace(0.0, 1.0, 5), ko::linspace(-2.0, 3.0, 4, false)};
       }},
      {"full_like", [](const Ts& i) { return Ts{ko::full_like(i[0], 2.5), ko::zeros_like(i[0])}; }},
      {"tril_triu", [](const Ts& i) { return Ts{ko::tril(i[0]), ko::triu(i[0], 1), ko::tril(i[0], -1)}; }},
      {"flip_roll",
       [](const Ts& i) { return Ts{ko::flip(i[0]), ko::flip(i[0], 1), ko::roll(i[0], 2), ko::roll(i[0], -1, 2)}; }},
      {"swap_move",
       [](const Ts& i) {
         return Ts{ko::swapaxes(i[0], 0, 2), ko::moveaxis(i[0], 0, -1),
                   ko::moveaxis(i[0], std::vector<int>{0, 1}, std::vector<int>{2, 0})};
       }},
      {"nan_tests",
       [](const Ts& i) {
         return Ts{ko::isnan(i[0]), ko::isinf(i[0]), ko::isfinite(i[0]), ko::nan_to_num(i[0]),
                   ko::nan_to_num(i[0], -1.0, 9.0, -9.0)};
       }},
      {"tensordot",
       [](const Ts& i) {
         return Ts{ko::tensordot(i[0], i[1], 1), ko::tensordot(i[0], ko::transpose(i[1]), {2}, {1})};
       }},
      {"tensordot_two_axes", [](const Ts& i) { return Ts{ko::tensordot(i[0], i[1])}; }},
      {"dot_forms",
       [](const Ts& i) {
         return Ts{ko::dot(i[0], i[1]), ko::dot(i[0], i[2]), ko::dot(i[2], i[2]),
                   ko::dot(ko::reshape(i[0], {2, 2, 3}), i[1])};
       }},
      {"inner_outer", [](const Ts& i) { return Ts{ko::inner(i[0], i[1]), ko::outer(i[0], i[1])}; }},
      {"diagonal_trace",
       [](const Ts& i) {
         return Ts{ko::diagonal(i[0]), ko::diagonal(i[0], 1, 1, 2), ko::diagonal(i[0], -1, 2, 1), ko::trace(i[0], 0, 1, 2)};
       }},
      {"diag", [](const Ts& i) { return Ts{ko::diag(i[0]), ko::diag(i[0], -2), ko::diag(i[1], 1)}; }},
      {"count_nonzero", [](const Ts& i) { return Ts{ko::count_nonzero(i[0]), ko::count_nonzero(i[0], 1)}; }},
      {"erf_rsqrt", [](const Ts& i) { return Ts{ko::erf(i[0]), ko::rsqrt(i[1])}; }},
      {"separable_conv", [](const Ts& i) { return Ts{ko::separable_conv(i[0], i[1], i[2], {1}, "same")}; }},
      {"ravel_logaddexp", [](const Ts& i) { return Ts{ko::ravel(i[0]), ko::logaddexp(i[0], i[1])}; }},
      {"average",
       [](const Ts& i) { return Ts{ko::average(i[0]), ko::average(i[0], 1, i[1]), ko::average(i[0], 0, i[2])}; }},
      {"meshgrid",
       [](const Ts& i) {
         Ts out = ko::meshgrid({i[0], i[1]});
         for (auto& t : ko::meshgrid({i[0], i[1]}, "ij")) out.push_back(t);
         return out;
       }},
      {"quantile_methods",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::quantile(x, 0.3, 1), ko::quantile(x, std::vector<double>{0.0, 0.5, 1.0}),
                   ko::quantile(x, 0.4, 0, "lower"), ko::quantile(x, 0.4, 0, "higher"),
                   ko::quantile(x, 0.4, 0, "midpoint"), ko::quantile(x, 0.625, 1, "nearest", true)};
       }},
      {"median",
       [](const Ts& i) { return Ts{ko::median(i[0]), ko::median(i[0], {0, 2}), ko::median(i[0], 1, true)}; }},
      {"average_pool_channels_first",
       [](const Ts& i) { return Ts{ko::average_pool(i[0], {2}, std::nullopt, "valid", "channels_first")}; }},
      {"einsum_ellipsis_bmm", [](const Ts& i) { return Ts{ko::einsum("...ij,...jk->...ik", i)}; }},
      {"einsum_ellipsis_middle", [](const Ts& i) { return Ts{ko::einsum("i...j->j...i", i)}; }},
      {"einsum_ellipsis_sum", [](const Ts& i) { return Ts{ko::einsum("...d,...d->...", i)}; }},
      {"einsum_trace", [](const Ts& i) { return Ts{ko::einsum("ii", i)}; }},
      {"einsum_diagonal_batch", [](const Ts& i) { return Ts{ko::einsum("bii->bi", i)}; }},
      {"einsum_diagonal_product", [](const Ts& i) { return Ts{ko::einsum("iij,jk->ik", i)}; }},
      {"einsum_chain3", [](const Ts& i) { return Ts{ko::einsum("ij,jk,kl->il", i)}; }},
      {"einsum_bilinear", [](const Ts& i) { return Ts{ko::einsum("bi,bij,bj->b", i)}; }},
      {"einsum_chain3_implicit", [](const Ts& i) { return Ts{ko::einsum("ij,jk,kl", i)}; }},
      {"einsum_ellipsis3", [](const Ts& i) { return Ts{ko::einsum("...i,ij,...j->...", i)}; }},
      {"einsum_four", [](const Ts& i) { return Ts{ko::einsum("ab,bc,cd,de->ae", i)}; }},
      {"cbrt_exp2_angles",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::cbrt(x), ko::exp2(x), ko::deg2rad(x), ko::rad2deg(x), ko::fabs(x), ko::cbrt(i[1]), ko::exp2(i[1])};
       }},
      {"trunc_divisions",
       [](const Ts& i) {
         return Ts{ko::trunc(i[0]),          ko::floor_divide(i[0], i[1]), ko::mod(i[0], i[1]), ko::fmod(i[0], i[1]),
                   ko::floor_divide(i[2], i[3]), ko::mod(i[2], i[3]),      ko::fmod(i[2], i[3]), ko::trunc(i[2])};
       }},
      {"divide_no_nan_heaviside",
       [](const Ts& i) { return Ts{ko::divide_no_nan(i[0], i[1]), ko::heaviside(i[2], 0.5)}; }},
      {"signbit_isclose_infs",
       [](const Ts& i) {
         return Ts{ko::signbit(i[0]), ko::isclose(i[0], i[1]), ko::isclose(i[0], i[1], 1e-5, 1e-8, true),
                   ko::allclose(i[0], i[1], 1e-5, 1e-8, true), ko::isneginf(i[0]), ko::isposinf(i[0])};
       }},
      {"sinc_logaddexp2_erfc",
       [](const Ts& i) { return Ts{ko::sinc(i[0]), ko::logaddexp2(i[0], i[1]), ko::erfc(i[0])}; }},
      {"activations_more",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::celu(x),          ko::celu(x, 0.5),         ko::glu(x),        ko::glu(x, 0),
                   ko::hard_shrink(x),   ko::soft_shrink(x, 0.3),  ko::tanh_shrink(x), ko::threshold(x, 0.2, -1.0),
                   ko::hard_tanh(x),     ko::hard_swish(x),        ko::log_sigmoid(x), ko::sparse_plus(x),
                   ko::squareplus(x),    ko::squareplus(x, 1.0)};
       }},
      {"normalizations_psnr",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::rms_normalization(x), ko::rms_normalization(x, i[1]), ko::layer_normalization(x, i[2], i[3]),
                   ko::layer_normalization(x, std::nullopt, std::nullopt, -1, 1e-3), ko::psnr(x, i[4], 2.0)};
       }},
      {"amax_ptp",
       [](const Ts& i) {
         return Ts{ko::amax(i[0], 1), ko::amin(i[0]), ko::ptp(i[0], 0), ko::ptp(i[0], 1, true)};
       }},
      {"nan_reductions",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::nansum(x, 1), ko::nanmean(x, 1), ko::nanmax(x, 1), ko::nanmin(x, 0),
                   ko::nanprod(x, 1), ko::nanvar(x, 1), ko::nanstd(x),    ko::nansum(x)};
       }},
      {"percentile_diff_trapezoid",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::percentile(x, 30.0, 1), ko::percentile(x, 75.0), ko::diff(x), ko::diff(x, 2, -1),
                   ko::diff(x, 1, 0), ko::trapezoid(x), ko::trapezoid(x, std::nullopt, 0.5, 0),
                   ko::trapezoid(x, i[1])};
       }},
      {"stacks_splits",
       [](const Ts& i) {
         const Tensor &a = i[0], &b = i[1], &v = i[2];
         Ts out{ko::append(a, b),      ko::append(a, b, 0),   ko::hstack({a, b}), ko::vstack({a, b}),
                ko::dstack({a, b}),    ko::hstack({v, v}),    ko::vstack({v, v}), ko::dstack({v, v})};
         for (const auto& parts : {ko::array_split(v, 3), ko::hsplit(a, 2), ko::vsplit(a, 3), ko::unstack(a, 1)}) {
           out.insert(out.end(), parts.begin(), parts.end());
         }
         return out;
       }},
      {"flips_rot90",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::fliplr(x), ko::flipud(x), ko::rot90(x), ko::rot90(x, -5), ko::rot90(x, 3), ko::rot90(x, 1, {1, 2})};
       }},
      {"tri_vander_kron",
       [](const Ts& i) {
         return Ts{ko::tri(3, 4, 1),      ko::tri(3),           ko::vander(i[0]), ko::vander(i[0], 4, true),
                   ko::kron(i[1], i[2]),  ko::kron(i[0], i[1]), ko::vander(i[3])};
       }},
      {"cross_vdot_logspace_diagflat",
       [](const Ts& i) {
         return Ts{ko::cross(i[0], i[1]),       ko::cross(i[2], i[3]),   ko::vdot(i[0], i[1]),
                   ko::logspace(0.0, 2.0, 5),   ko::logspace(1.0, 3.0, 4, false, 2.0),
                   ko::diagflat(i[2]),          ko::diagflat(i[2], -1)};
       }},
      {"select_digitize_search",
       [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{ko::select({ko::less(x, -0.5), ko::greater(x, 0.5)}, {ko::multiply(x, 2.0), ko::subtract(x, 1.0)}, -3.0),
                   ko::digitize(x, i[1]), ko::searchsorted(i[2], i[3]), ko::searchsorted(i[2], i[3], "right")};
       }},
      {"bincount_in_top_k_multi_hot_isin",
       [](const Ts& i) {
         return Ts{ko::bincount(i[0]),          ko::bincount(i[0], ko::stop_gradient(i[1]), 7), ko::bincount(i[2]),
                   ko::in_top_k(i[3], i[4], 1), ko::in_top_k(i[3], i[4], 2), ko::multi_hot(i[5], 5),
                   ko::isin(i[0], i[5]),        ko::isin(i[0], i[5], true),   ko::copy(i[1])};
       }},
      {"conv_transpose",
       [](const Ts& i) {
         return Ts{ko::conv_transpose(i[0], i[1], {2}, "same"), ko::conv_transpose(i[0], i[1], {2, 1}, "valid"),
                   ko::conv_transpose(i[0], i[1], {2}, "same", std::vector<int64_t>{1}),
                   ko::conv_transpose(i[2], i[3], {1}, "valid", std::nullopt, "channels_first", {2})};
       }},
      {"segments",
       [](const Ts& i) {
         const Tensor& d = i[0];
         return Ts{ko::segment_sum(d, i[1]), ko::segment_sum(d, i[2], 6), ko::segment_max(d, i[2]),
                   ko::segment_max(d, i[3], 3), ko::segment_sum(ko::multiply(i[3], 2), i[3])};
       }},
      {"scatter_slice_update",
       [](const Ts& i) {
         const Tensor first2 = ko::slice(i[0], {0, 0}, {2, 2}), v2 = ko::slice(i[1], {0}, {2});
         return Ts{ko::scatter(i[0], i[1], {3, 2}), ko::scatter_update(i[2], first2, v2),
                   ko::scatter_update(i[2], i[0], i[1], "add"),
                   ko::slice_update(ko::stop_gradient(i[2]), {1, 0}, ko::stop_gradient(i[3])),
                   ko::scatter(ko::slice(i[0], {0, 0}, {3, 1}), i[4], {3, 4})};
       }},
      {"windows",
       [](const Ts&) {
         return Ts{ko::bartlett(7), ko::hamming(6),     ko::hanning(5),  ko::blackman(8),
                   ko::kaiser(7, 5.0), ko::kaiser(4, 0.5), ko::hamming(1), ko::bartlett(1)};
       }},
      {"fmax_fmin_nan", [](const Ts& i) { return Ts{ko::fmax(i[0], i[1]), ko::fmin(i[0], i[1]), ko::fmax(i[0], 0.5)}; }},
      {"nan_scans_args",
       [](const Ts& i) {
         return Ts{ko::nancumsum(i[0], 1),       ko::nancumprod(i[0], 0),   ko::nancumsum(i[0]),
                   ko::nanargmax(i[1], 1),       ko::nanargmin(i[1], 1),    ko::nanargmax(i[1]),
                   ko::nanargmin(i[1], 0, true)};
       }},
      {"geomspace",
       [](const Ts&) {
         return Ts{ko::geomspace(1.0, 1000.0, 4), ko::geomspace(-2.0, -32.0, 5), ko::geomspace(0.5, 8.0, 4, false)};
       }},
      {"sparse_activations",
       [](const Ts& i) { return Ts{ko::sparse_sigmoid(i[0]), ko::sparsemax(i[1]), ko::sparsemax(i[1], 0)}; }},
      {"depth_space",
       [](const Ts& i) {
         return Ts{ko::depth_to_space(i[0], 2), ko::space_to_depth(i[1], 2),
                   ko::depth_to_space(i[1], 2, "channels_first"), ko::space_to_depth(i[0], 2, "channels_first")};
       }},
      {"corrcoef_cdist", [](const Ts& i) { return Ts{ko::corrcoef(i[0]), ko::cdist(i[1], i[2])}; }},
      {"ldexp_unravel",
       [](const Ts& i) {
         Ts out{ko::ldexp(i[0], i[1])};
         for (const Tensor& t : ko::unravel_index(i[2], {3, 4, 2})) out.push_back(t);
         return out;
       }},
      {"histogram_frames",
       [](const Ts& i) {
         Ts out = ko::histogram(i[0], 4, std::pair{-1.0, 1.5});
         for (const Tensor& t : ko::histogram(ko::stop_gradient(i[0]), 5)) out.push_back(t);
         out.push_back(ko::extract_sequences(i[1], 4, 3));
         return out;
       }},
      {"bitwise_gcd",
       [](const Ts& i) {
         const Tensor col = ko::expand_dims(i[0], 1);
         return Ts{ko::bitwise_and(i[0], i[1]), ko::bitwise_or(i[0], i[1]), ko::bitwise_xor(i[0], i[1]),
                   ko::bitwise_invert(i[0]), ko::bitwise_not(i[1]), ko::bitwise_left_shift(i[0], i[2]),
                   ko::left_shift(i[1], 3), ko::bitwise_right_shift(i[0], i[2]), ko::right_shift(i[1], i[2]),
                   ko::bitwise_and(i[3], col), ko::gcd(i[0], i[1]), ko::lcm(i[0], i[1]), ko::gcd(i[3], 6)};
       }},
      {"bitwise_int64",
       [](const Ts& i) { return Ts{ko::bitwise_xor(i[0], i[1]), ko::left_shift(i[0], 40), ko::lcm(i[0], i[1])}; }},
      {"i0", [](const Ts& i) { return Ts{ko::i0(i[0]), ko::i0(i[1])}; }},
      {"nan_quantiles",
       [](const Ts& i) {
         const Tensor held = ko::stop_gradient(i[0]);
         return Ts{ko::nanquantile(held, 0.3, 1), ko::nanmedian(held, 0), ko::nanpercentile(held, 90.0, 1, "lower"),
                   ko::nanmedian(i[0]), ko::nanquantile(held, 0.5, 1, "nearest", true),
                   ko::nanquantile(i[0], std::vector<double>{0.2, 0.7}), ko::nanquantile(held, 0.6, 1, "higher"),
                   ko::nanquantile(held, 0.25, 0, "midpoint")};
       }},
      {"correlate_argpartition",
       [](const Ts& i) {
         const Tensor head = ko::slice(i[3], {0}, {3});
         return Ts{ko::correlate(i[0], i[1]), ko::correlate(i[0], i[1], "same"), ko::correlate(i[0], i[2], "full"),
                   ko::correlate(i[0], i[2], "same"), ko::correlate(i[3], head), ko::argpartition(i[3], 2),
                   ko::argpartition(i[3], 0), ko::argpartition(i[3], 9)};
       }},
      {"real_parts",
       [](const Ts& i) {
         return Ts{ko::real(i[0]), ko::imag(i[0]), ko::conj(i[0]), ko::conjugate(i[0]), ko::angle(i[0]),
                   ko::isreal(i[0]), ko::angle(i[1])};
       }},
      {"adaptive_pools",
       [](const Ts& i) {
         return Ts{ko::adaptive_average_pool(i[0], {3}), ko::adaptive_max_pool(i[0], {4}),
                   ko::adaptive_average_pool(i[1], {3, 2}), ko::adaptive_max_pool(i[1], {2, 5}),
                   ko::adaptive_average_pool(i[1], {4}, "channels_first"), ko::adaptive_max_pool(i[2], {2, 1, 3}),
                   ko::adaptive_average_pool(i[2], {2})};
       }},
      {"segment_prod_scatter_reduce",
       [](const Ts& i) {
         return Ts{ko::segment_prod(i[0], i[1]), ko::segment_prod(i[0], i[2], 3),
                   ko::scatter_update(i[3], i[4], i[5], "max"), ko::scatter_update(i[3], i[4], i[5], "min"),
                   ko::scatter_update(i[3], i[4], i[5], "mul")};
       }},
      {"erfinv", [](const Ts& i) { return Ts{ko::erfinv(i[0]), ko::erfinv(ko::stop_gradient(i[1]))}; }},
      {"nextafter",
       [](const Ts& i) {
         return Ts{ko::nextafter(i[0], i[1]), ko::nextafter(i[2], i[3]), ko::nextafter(i[2], 2.0),
                   ko::nextafter(i[0], 0.0)};
       }},
      {"nonzero_unique",
       [](const Ts& i) {
         Ts out = ko::nonzero(i[0]);
         for (const Tensor& t : ko::unique(i[1], true, true)) out.push_back(t);
         out.push_back(ko::unique(ko::stop_gradient(i[2]))[0]);
         return out;
       }},
      {"unique_options",
       [](const Ts& i) {
         Ts out;
         auto add = [&out](const Ts& ts) { out.insert(out.end(), ts.begin(), ts.end()); };
         add(ko::unique(i[0], {.sorted = false, .return_index = true, .return_inverse = true, .return_counts = true}));
         add(ko::unique(i[0], {.return_index = true, .return_counts = true, .size = 7, .fill_value = -7}));
         add(ko::unique(i[0], {.return_index = true, .return_inverse = true, .size = 2}));
         add(ko::unique(i[1], {.return_index = true, .return_inverse = true, .return_counts = true, .axis = 0}));
         add(ko::unique(i[1], {.sorted = false, .return_inverse = true, .axis = 1}));
         add(ko::unique(i[1], {.return_index = true, .return_counts = true, .axis = -1, .size = 5, .fill_value = 9}));
         add(ko::unique(i[1], {.axis = 0, .size = 2}));
         add(ko::unique(ko::stop_gradient(i[2]), {.sorted = false, .return_index = true, .return_counts = true}));
         return out;
       }},
  };
  return m;
}

}  // namespace

TEST(KerasOps, EveryCaseMatchesKeras) { keras_cases::check_every_case(keras_ops_ref(), cases(), 2e-5, "keras_ops.json"); }

TEST(KerasOps, MathFunctionsTakeFloatsOutsideTheirDomainNaNAndCoreOpsRefuseIntegers) {
  const Tensor x = Tensor::from_vector<float>({2.f, -1.f, 1.f}, {3});
  const auto asin = ko::arcsin(x).to_vector<double>();
  EXPECT_TRUE(std::isnan(asin[0]));
  EXPECT_NEAR(asin[1], -M_PI / 2, 1e-6);
  EXPECT_TRUE(std::isinf(ko::arctanh(x).to_vector<double>()[2]));
  try {
    (void)ops::sin(Tensor::zeros({2, 3}, DType::int32));
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("Sin takes a float tensor, got int32 of shape (2, 3)"));
  }
  EXPECT_EQ(ko::sin(Tensor::zeros({2}, DType::int64)).dtype(), DType::float32);
  EXPECT_NEAR(ko::round(Tensor::from_vector<float>({0.125f}, {1}), 2).item(), 0.12, 1e-6);  // halves to even
}

// The integer ops refuse floats and bool as Keras's TensorFlow backend does; correlate names its modes and lengths;
// the quantiles name their methods.
TEST(KerasOps, IntegerOpsCorrelateAndNanQuantilesRefuseBadArguments) {
  using osprey::testing::error_of;
  const Tensor f = Tensor::from_vector<float>({1.f, 2.f}, {2});
  const Tensor i = Tensor::from_vector<int32_t>({6, 4}, {2});
  EXPECT_THAT(error_of([&] { ko::bitwise_and(f, f); }),
              ::testing::HasSubstr("bitwise_and: expects two integer tensors (int32 or int64) of one dtype; got float32"));
  EXPECT_THROW(ko::gcd(ops::cast(i, DType::bool_), ops::cast(i, DType::bool_)), InvalidArgumentError);
  EXPECT_THROW(ko::bitwise_invert(f), InvalidArgumentError);
  EXPECT_EQ(ko::lcm(i, ops::cast(i, DType::int64)).dtype(), DType::int64);  // promoted to one dtype first
  EXPECT_THAT(error_of([&] { ko::correlate(f, f, "circular"); }), ::testing::HasSubstr("Invalid mode: 'circular'"));
  EXPECT_THAT(error_of([&] { ko::correlate(f, Tensor::ones({3})); }),
              ::testing::HasSubstr("no longer than the first (2)"));
  EXPECT_THAT(error_of([&] { ko::correlate(Tensor::ones({2, 2}), f); }), ::testing::HasSubstr("two 1-D sequences"));
  EXPECT_THAT(error_of([&] { ko::nanquantile(f, 0.5, {}, "cubic"); }), ::testing::HasSubstr("method 'cubic'"));
  EXPECT_THROW(ko::nanquantile(f, 1.5), ValueError);
  EXPECT_THROW(ko::nanpercentile(f, 101.0), InvalidArgumentError);
  EXPECT_EQ(ko::argpartition(Tensor::zeros({0}), 1).shape(), Shape({0}));
}

TEST(KerasOps, PadTileAndRepeatRefuseBadArguments) {
  const Tensor x = Tensor::ones({3, 2});
  EXPECT_THROW((void)ko::pad(x, {{1, 1}}, "reflect", 2.0), ValueError);
  EXPECT_THROW((void)ko::pad(x, {{1, 1}, {1, 1}, {1, 1}}), InvalidArgumentError);
  EXPECT_THROW((void)ko::pad(x, {{-1, 0}, {0, 0}}), InvalidArgumentError);
  // Wider than the axis allows in TensorFlow (which refuses it): reflected again, as NumPy and JAX (test_keras_pad).
  EXPECT_EQ(ko::pad(x, {{0, 0}, {2, 0}}, "reflect").shape(), Shape({3, 4}));
  EXPECT_EQ(ko::pad(x, {{0, 0}, {2, 2}}, "symmetric").shape(), Shape({3, 6}));
  EXPECT_EQ(ko::pad(x, {{1, 2}}).shape(), Shape({6, 5}));  // one pair for every axis, as NumPy
  EXPECT_THROW((void)ko::tile(x, {2, -1}), InvalidArgumentError);
  EXPECT_THROW((void)ko::repeat(x, std::vector<int64_t>{1, 2}, 0), InvalidArgumentError);
  EXPECT_THROW((void)ko::repeat(x, -1), InvalidArgumentError);
  EXPECT_EQ(ko::repeat(x, 0, 1).shape(), Shape({3, 0}));
}

TEST(KerasOps, NormAndNormalizeRefuseWhatKerasRefuses) {
  const Tensor x = Tensor::ones({2, 3, 2});
  EXPECT_THROW((void)ko::norm(x), ValueError);  // three axes, as Keras
  EXPECT_THROW((void)ko::norm(x, 3.0, {0, 1}), ValueError);  // no such matrix norm
  EXPECT_THROW((void)ko::norm(x, std::string("fro"), 0), ValueError);  // a matrix norm over one axis
  EXPECT_THROW((void)ko::norm(x, std::nullopt, {0, 0}), InvalidArgumentError);
  EXPECT_THROW((void)ko::norm(x, std::nullopt, 3), InvalidArgumentError);
  EXPECT_THROW((void)ko::normalize(x, -1, 0), ValueError);
  EXPECT_THROW((void)ko::softmax(Tensor::scalar(1.0)), InvalidArgumentError);
  EXPECT_EQ(ko::relu(Tensor::ones({2}, DType::float64)).dtype(), DType::float64);
}

TEST(KerasOps, CrossEntropiesRefuseMismatchedShapesAndLabelsOutOfRange) {
  const Tensor p = Tensor::full({2, 3}, 1.0 / 3);
  EXPECT_THROW((void)ko::binary_crossentropy(Tensor::ones({2, 2}), p), ValueError);
  EXPECT_THROW((void)ko::categorical_crossentropy(Tensor::ones({3, 2}), p), ValueError);
  EXPECT_THROW((void)ko::sparse_categorical_crossentropy(Tensor::zeros({3}, DType::int32), p), ValueError);
  EXPECT_THROW((void)ko::sparse_categorical_crossentropy(Tensor::zeros({2}, DType::int32), p, false, 0), ValueError);
  try {
    (void)ko::sparse_categorical_crossentropy(Tensor::from_vector<int32_t>({0, 3}, {2}), p);
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("label value of 3 which is outside the valid range of [0, 3)"));
  }
  EXPECT_THROW((void)ko::sparse_categorical_crossentropy(Tensor::from_vector<int32_t>({-1, 0}, {2}), p),
               InvalidArgumentError);
}

TEST(KerasOps, RearrangementsAndContractionsRefuseBadArguments) {
  const Tensor x = Tensor::ones({2, 3, 4});
  EXPECT_THROW((void)ko::tensordot(x, Tensor::ones({5, 4}), {1}, {0}), InvalidArgumentError);  // 3 against 5
  EXPECT_THROW((void)ko::tensordot(x, x, {0, 1}, {0}), InvalidArgumentError);
  EXPECT_THROW((void)ko::tensordot(x, x, 4), InvalidArgumentError);
  EXPECT_THROW((void)ko::moveaxis(x, std::vector<int>{0, 0}, std::vector<int>{1, 2}), InvalidArgumentError);
  EXPECT_THROW((void)ko::moveaxis(x, std::vector<int>{0}, std::vector<int>{1, 2}), InvalidArgumentError);
  EXPECT_THROW((void)ko::diagonal(x, 0, 1, -2), InvalidArgumentError);
  EXPECT_THROW((void)ko::diag(x), InvalidArgumentError);
  EXPECT_THROW((void)ko::tril(Tensor::ones({3})), InvalidArgumentError);
  EXPECT_THROW((void)ko::flip(x, 3), InvalidArgumentError);
  EXPECT_THROW((void)ko::linspace(0, 1, -1), ValueError);
  EXPECT_EQ(ko::diagonal(x, 5, 1, 2).shape(), Shape({2, 0}));  // an offset past the matrix: empty, as NumPy
  EXPECT_THROW((void)ko::quantile(x, 1.5), ValueError);
  EXPECT_THROW((void)ko::quantile(x, 0.5, {}, "cubic"), ValueError);
  EXPECT_THROW((void)ko::median(Tensor::ones({2, 0}), 1), InvalidArgumentError);
  EXPECT_THROW((void)ko::meshgrid({Tensor::ones({2})}, "xz"), ValueError);
  EXPECT_THROW((void)ko::average(x, 1, Tensor::ones({4})), InvalidArgumentError);
  EXPECT_THROW((void)ko::average(x, {}, Tensor::ones({4})), InvalidArgumentError);
}

// The ops of math_more.cpp, reduce_more.cpp and array_more.cpp: typed errors naming the values.
TEST(KerasOps, MoreOpsRefuseBadArguments) {
  const Tensor x = Tensor::ones({2, 3, 4});
  try {
    (void)ko::glu(x, 1);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("axis 1 of even size, got 3"));
  }
  EXPECT_THROW((void)ko::glu(x, 3), InvalidArgumentError);
  // Windows of a negative length, a geometric sequence through zero or changing sign, an axis out of range.
  EXPECT_THROW((void)ko::kaiser(-1, 2.0), ValueError);
  EXPECT_EQ(ko::hamming(0).shape(), Shape({0}));
  EXPECT_THROW((void)ko::geomspace(0.0, 4.0, 3), ValueError);
  EXPECT_THROW((void)ko::geomspace(-1.0, 4.0, 3), ValueError);
  EXPECT_THROW((void)ko::sparsemax(x, 3), InvalidArgumentError);
  // Blocks that do not divide, ranks other than Keras's, float exponents, a frame longer than the sequence.
  EXPECT_THROW((void)ko::depth_to_space(Tensor::ones({1, 2, 2, 6}), 2), ValueError);
  EXPECT_THROW((void)ko::space_to_depth(Tensor::ones({1, 3, 2, 1}), 2), ValueError);
  EXPECT_THROW((void)ko::depth_to_space(x, 2), ValueError);
  EXPECT_THROW((void)ko::cdist(Tensor::ones({2, 3}), Tensor::ones({2, 4})), ValueError);
  EXPECT_THROW((void)ko::ldexp(Tensor::ones({2}), Tensor::ones({2})), ValueError);
  EXPECT_THROW((void)ko::histogram(x, 3), ValueError);
  EXPECT_THROW((void)ko::histogram(Tensor::ones({3}), 0), ValueError);
  EXPECT_THROW((void)ko::unravel_index(Tensor::ones({2}), {2, 2}), ValueError);
  EXPECT_THROW((void)ko::extract_sequences(Tensor::ones({2, 3}), 4, 1), ValueError);
  EXPECT_THROW((void)ko::extract_sequences(Tensor::ones({2, 3}), 2, 0), ValueError);
  EXPECT_THROW((void)ko::psnr(x, Tensor::ones({2, 3}), 1.0), ValueError);
  EXPECT_THROW((void)ko::percentile(x, 101.0), InvalidArgumentError);
  EXPECT_THROW((void)ko::diff(x, -1), ValueError);
  EXPECT_THROW((void)ko::trapezoid(x, Tensor::ones({3})), InvalidArgumentError);  // 3 points, 4 along the axis
  EXPECT_THROW((void)ko::array_split(x, 0), ValueError);
  EXPECT_THROW((void)ko::vsplit(Tensor::ones({4}), 2), ValueError);
  EXPECT_THROW((void)ko::dsplit(Tensor::ones({4, 2}), 2), ValueError);
  EXPECT_THROW((void)ko::rot90(x, 1, {1, -2}), ValueError);
  EXPECT_THROW((void)ko::rot90(Tensor::ones({3}), 1), ValueError);
  EXPECT_THROW((void)ko::vander(x), ValueError);
  EXPECT_THROW((void)ko::cross(Tensor::ones({2, 4}), Tensor::ones({2, 3})), ValueError);
  EXPECT_THROW((void)ko::select({ko::greater(x, 0.0)}, {}), ValueError);
  EXPECT_THROW((void)ko::digitize(x, Tensor::ones({2, 2})), ValueError);
  EXPECT_THROW((void)ko::searchsorted(Tensor::ones({3}), x, "middle"), ValueError);
  EXPECT_THROW((void)ko::bincount(x), ValueError);  // floats
  try {
    (void)ko::bincount(Tensor::from_vector<int32_t>({2, -3, 1}, {3}));
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("non-negative; it holds -3"));
  }
  EXPECT_THROW((void)ko::bincount(Tensor::from_vector<int32_t>({1, 2}, {2}), Tensor::ones({3})), ValueError);
  EXPECT_THROW((void)ko::in_top_k(Tensor::ones({2}, DType::int32), Tensor::ones({3, 4}), 1), ValueError);
  // rot90 with k = 2 is NumPy's (Keras 3.15's TensorFlow backend transposes the plane there instead): two turns.
  const Tensor r = ko::reshape(ko::arange(0, 24), {2, 3, 4});
  EXPECT_EQ(ko::rot90(r, 2).to_vector<double>(), ko::rot90(ko::rot90(r, 1), 1).to_vector<double>());
  EXPECT_EQ(ko::rot90(r, 2).to_vector<double>(), ko::flip(r, {0, 1}).to_vector<double>());
  EXPECT_EQ(ko::bincount(Tensor::zeros({0}, DType::int32), std::nullopt, 3).to_vector<double>(),
            (std::vector<double>{0, 0, 0}));
}

// scatter_ops.cpp and conv_transpose: typed errors naming the values.
TEST(KerasOps, SegmentsScattersAndTransposedConvolutionsRefuseBadArguments) {
  const Tensor data = Tensor::ones({4, 2});
  const Tensor ids = Tensor::from_vector<int32_t>({0, 1, 5, 1}, {4});
  try {
    (void)ko::segment_sum(data, ids, 3);
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("5"));
  }
  EXPECT_THROW((void)ko::segment_sum(data, Tensor::ones({4})), ValueError);          // float ids
  EXPECT_THROW((void)ko::segment_max(data, Tensor::from_vector<int32_t>({0, 1}, {2})), ValueError);  // one per row
  EXPECT_THROW((void)ko::segment_sum(data, ids, -1), ValueError);
  // Negative ids are dropped (TensorFlow's unsorted segment sum).
  EXPECT_EQ(ko::segment_sum(Tensor::from_vector<float>({1, 2, 4}, {3}), Tensor::from_vector<int32_t>({0, -1, 0}, {3}), 1)
                .to_vector<double>(),
            (std::vector<double>{5}));
  const Tensor idx = Tensor::from_vector<int32_t>({0, 1, 3, 0}, {2, 2});
  try {
    (void)ko::scatter(idx, Tensor::ones({2}), {3, 2});
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("index 0 of row 1 is 3, outside [0, 3)"));
  }
  EXPECT_THROW((void)ko::scatter(Tensor::from_vector<int32_t>({0, 1}, {1, 2}), Tensor::ones({2}), {3, 2}), ValueError);
  EXPECT_THROW((void)ko::scatter(Tensor::ones({1, 2}), Tensor::ones({1}), {3, 2}), ValueError);  // float indices
  EXPECT_THROW((void)ko::scatter_update(Tensor::zeros({3, 2}), Tensor::from_vector<int32_t>({0, 1}, {1, 2}),
                                        Tensor::ones({1}), "median"),
               ValueError);
  EXPECT_THROW((void)ko::scatter_update(Tensor::zeros({3, 2}), Tensor::from_vector<int32_t>({0, 1}, {2, 1}),
                                        Tensor::ones({2}), "max"),  // two rows of 2 need 4 values
               ValueError);
  EXPECT_THROW((void)ko::scatter_update(Tensor::zeros({3, 2}), Tensor::from_vector<int32_t>({0, 3}, {2, 1}),
                                        Tensor::ones({2, 2}), "mul"),
               InvalidArgumentError);
  EXPECT_THROW((void)ko::segment_prod(Tensor::ones({3, 2}), Tensor::from_vector<int32_t>({0, 1}, {2})), ValueError);
  EXPECT_THROW((void)ko::unique(Tensor::ones({3, 2}), {.axis = 2}), InvalidArgumentError);
  EXPECT_THROW((void)ko::unique(Tensor::scalar(1), {.axis = 0}), ValueError);
  EXPECT_THROW((void)ko::unique(Tensor::ones({3}), {.size = -1}), ValueError);
  // A rank-3 input along its last axis: TensorFlow compares the slices with the axes swapped (x[:, :, k]
  // transposed, row-major), so the slices sort by x[0, 0], then x[1, 0], then x[0, 1]: here the second slice
  // first (2 < 5 at x[1, 0]; NumPy's row-major order would keep them, 0 < 9 at x[0, 1]). Keras 3.15's values.
  const Tensor cube = Tensor::from_vector<int32_t>({1, 1, 0, 9, 5, 2, 0, 0}, {2, 2, 2});
  EXPECT_EQ(ko::unique(cube, {.axis = 2})[0].to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 9, 0, 2, 5, 0, 0}));
  EXPECT_THROW((void)ko::slice_update(Tensor::zeros({3, 4}), {2, 0}, Tensor::ones({2, 2})), InvalidArgumentError);
  EXPECT_THROW((void)ko::slice_update(Tensor::zeros({3, 4}), {0}, Tensor::ones({2, 2})), ValueError);
  const Tensor x = Tensor::ones({1, 4, 4, 2});
  EXPECT_THROW((void)ko::conv_transpose(x, Tensor::ones({3, 3, 5, 3})), InvalidArgumentError);  // 2 channels in
  EXPECT_THROW((void)ko::conv_transpose(x, Tensor::ones({3, 3, 5, 2}), {2}, "same", std::vector<int64_t>{2}),
               ValueError);  // output padding not below the stride
  EXPECT_THROW((void)ko::conv_transpose(x, Tensor::ones({3, 3, 5, 2}), {1}, "full"), ValueError);
  // nonzero and unique of nothing: empty results.
  EXPECT_EQ(ko::nonzero(Tensor::zeros({2, 3}))[1].shape(), Shape({0}));
  EXPECT_EQ(ko::unique(Tensor::zeros({0}), true, true)[2].shape(), Shape({0}));
}

TEST(KerasOps, ConvolutionAndPoolingRefuseBadArguments) {
  const Tensor x = Tensor::ones({2, 5, 5, 4}), k = Tensor::ones({3, 3, 4, 2});
  EXPECT_THROW((void)ko::conv(x, k, {1}, "causal"), ValueError);
  EXPECT_THROW((void)ko::conv(x, k, {1, 1, 1}), ValueError);
  EXPECT_THROW((void)ko::conv(x, k, {0}), ValueError);
  EXPECT_THROW((void)ko::conv(x, k, {1}, "valid", "channels_middle"), ValueError);
  EXPECT_THROW((void)ko::conv(Tensor::ones({2, 5}), k), InvalidArgumentError);
  try {
    (void)ko::conv(x, Tensor::ones({3, 3, 3, 2}));
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("inputs have 4 channels, the kernel of shape (3, 3, 3, 2) takes 3"));
  }
  EXPECT_THROW((void)ko::depthwise_conv(x, Tensor::ones({3, 3, 2, 2})), InvalidArgumentError);
  EXPECT_THROW((void)ko::max_pool(x, {2, 2, 2}), ValueError);
  EXPECT_THROW((void)ko::average_pool(x, {2}, std::vector<int64_t>{1}, "full"), ValueError);
  EXPECT_EQ(ko::conv(Tensor::ones({1, 4, 4, 2}, DType::int32), Tensor::ones({2, 2, 2, 1}, DType::int32)).dtype(),
            DType::float32);
}

TEST(KerasOps, BroadcastingErrorsNameBothShapes) {
  try {
    (void)ko::add(Tensor::zeros({2, 3}), Tensor::zeros({4}));
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("(2, 3)"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("(4,)"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("could not be broadcast"));
  }
  EXPECT_THROW((void)ko::where(Tensor::zeros({2}, DType::bool_), Tensor::zeros({3}), 1.0), InvalidArgumentError);
  EXPECT_THROW((void)ko::broadcast_to(Tensor::zeros({3}), {3, 2}), InvalidArgumentError);
  EXPECT_THROW((void)ko::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 2})), InvalidArgumentError);
}

TEST(KerasOps, AxesOutOfRangeOrRepeatedAreErrors) {
  const Tensor x = Tensor::ones({2, 3});
  EXPECT_THROW((void)ko::sum(x, 2), InvalidArgumentError);
  EXPECT_THROW((void)ko::sum(x, {0, -2}), InvalidArgumentError);
  EXPECT_THROW((void)ko::argmax(x, -3), InvalidArgumentError);
  EXPECT_THROW((void)ko::cumsum(x, 5), InvalidArgumentError);
  EXPECT_THROW((void)ko::expand_dims(x, 4), InvalidArgumentError);
  EXPECT_THROW((void)ko::squeeze(x, 0), InvalidArgumentError);
  EXPECT_THROW((void)ko::split(x, int64_t{2}, 1), InvalidArgumentError);
  EXPECT_THROW((void)ko::top_k(x, 4), InvalidArgumentError);
  EXPECT_THROW((void)ko::take(x, Tensor::from_vector<int32_t>({0, 3}, {2}), 1), InvalidArgumentError);
  EXPECT_THROW((void)ko::get_item(x, 2), InvalidArgumentError);
  EXPECT_THROW((void)ko::reshape(x, {-1, 4}), InvalidArgumentError);
  EXPECT_THROW((void)ko::einsum("ij->ii", {Tensor::ones({2, 2})}), InvalidArgumentError);      // output repeats
  EXPECT_THROW((void)ko::einsum("ii->i", {Tensor::ones({2, 3})}), InvalidArgumentError);       // a non-square diagonal
  EXPECT_THROW((void)ko::einsum("...ij->ij", {Tensor::ones({4, 2, 2})}), InvalidArgumentError);  // no output ellipsis
  EXPECT_THROW((void)ko::einsum("...i...->i", {Tensor::ones({2, 2})}), InvalidArgumentError);  // two ellipses
  EXPECT_THROW((void)ko::einsum("..i->i", {Tensor::ones({2, 2})}), InvalidArgumentError);      // a stray '.'
  EXPECT_THROW((void)ko::einsum("...ijk->k", {Tensor::ones({2, 2})}), InvalidArgumentError);   // rank below the labels
  try {  // ellipsis axes of 3 and 4 do not broadcast: both shapes in the message
    (void)ko::einsum("...i,...i->...", {Tensor::ones({3, 2}), Tensor::ones({4, 2})});
    ADD_FAILURE() << "broadcast 3 against 4";
  } catch (const InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), ::testing::AllOf(::testing::HasSubstr("(3, 2)"), ::testing::HasSubstr("(4, 2)")));
  }
  EXPECT_THROW((void)ko::einsum("ij,jk->ik", {x, Tensor::ones({2, 2})}), InvalidArgumentError);
  EXPECT_THROW((void)ko::einsum("ij->k", {x}), InvalidArgumentError);
  EXPECT_THROW((void)ops::add(Tensor::zeros({2}, DType::bool_), Tensor::zeros({2}, DType::bool_)), InvalidArgumentError);
}

TEST(KerasOps, BoolTensorsCastCompareAndReduce) {
  const Tensor b = ko::greater(Tensor::from_vector<float>({-1, 0, 2, 3}, {4}), 0.5);
  EXPECT_EQ(b.dtype(), DType::bool_);
  EXPECT_EQ(b.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(ko::sum(b).dtype(), DType::int32);
  EXPECT_EQ(ko::sum(b).item(), 2.0);
  EXPECT_EQ(ko::logical_not(b).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 0, 0}));
  EXPECT_EQ(Tensor::from_vector<bool>({true, false}, {2}).to_vector<float>(), (std::vector<float>{1, 0}));
  EXPECT_EQ(Tensor::ones({2}, DType::bool_).to_vector<int32_t>(), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(dtype_from_name("bool"), DType::bool_);
  EXPECT_EQ(ko::cast(Tensor::from_vector<float>({0.f, NAN, -2.f}, {3}), DType::bool_).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 1, 1}));
}

// A classifier's evaluation written with keras::ops, as a Keras user would: argmax, equal, mean, one_hot,
// top-k accuracy.
TEST(KerasOps, ClassifierEvaluationWithoutHandWrittenLoops) {
  const Tensor probs = Tensor::from_vector<float>({0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f, 0.2f, 0.3f, 0.5f, 0.4f, 0.4f, 0.2f},
                                                  {4, 3});
  const Tensor labels = Tensor::from_vector<int32_t>({1, 2, 2, 1}, {4});
  const Tensor predicted = ko::argmax(probs, -1);
  EXPECT_EQ(predicted.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 2, 0}));
  EXPECT_DOUBLE_EQ(ko::mean(ko::cast(ko::equal(predicted, labels), DType::float32)).item(), 0.5);
  const Tensor top2 = ko::top_k(probs, 2)[1];
  const Tensor hit = ko::any(ko::equal(top2, ko::expand_dims(labels, -1)), -1);
  EXPECT_EQ(hit.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1, 1}));
  EXPECT_EQ(ko::sum(ko::one_hot(labels, 3), 0).to_vector<float>(), (std::vector<float>{0, 2, 2}));
}


// Integers multiply in float32 and come back in their dtype, as Keras's TensorFlow backend: 16777217 + 1 is
// 16777216 there and here (the case table compares within a relative tolerance; this exactly).
TEST(KerasOps, IntegerMatmulComputesInFloat32AsKeras) {
  const Tensor out = ko::matmul(Tensor::from_vector<int32_t>({16777217, 1}, {1, 2}), Tensor::from_vector<int32_t>({1, 1}, {2, 1}));
  EXPECT_EQ(out.dtype(), DType::int32);
  EXPECT_EQ(out.to_vector<int32_t>(), (std::vector<int32_t>{16777216}));
}
