// Files into tensors: NumPy's .npy and .npz (format 1.0-3.0: magic, version, header length, a Python-literal header
// with descr, fortran_order and shape, then the data). CSV files: csv.cpp.
// Untrusted input: the header is bounded, the shape's size is checked against the bytes present before anything
// is allocated, and only plain numeric dtypes are read (never pickles).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "data/pipeline.h"
#include "keras/saving/zip_store.h"
#include "core/half.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::data {

namespace {

constexpr std::size_t kMaxHeader = 65535;

// One key's value from the header dict, e.g. 'descr': '<f4' -> "'<f4'".
std::string header_value(const std::string& h, const std::string& key, const std::function<ValueError(std::string)>& bad) {
  const std::string k = "'" + key + "'";
  const auto at = h.find(k);
  if (at == std::string::npos) throw bad("its header has no " + k);
  auto v = h.find(':', at + k.size());
  if (v == std::string::npos) throw bad("its header's " + k + " has no value");
  ++v;
  while (v < h.size() && h[v] == ' ') ++v;
  std::size_t end = v;
  if (v < h.size() && h[v] == '(') end = h.find(')', v) + 1;
  else if (v < h.size() && h[v] == '\'') end = h.find('\'', v + 1) + 1;
  else end = h.find_first_of(",}", v);
  if (end == std::string::npos || end == 0 || end > h.size()) throw bad("its header's " + k + " is not closed");
  return h.substr(v, end - v);
}

Tensor parse_npy(const std::string& s, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return ValueError(fmt::format("load_npy: {} is not a valid .npy array: {}", what, why));
  };
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) throw bad("it does not start with the .npy magic");
  const auto major = static_cast<uint8_t>(s[6]);
  std::size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(s[8]) | (static_cast<std::size_t>(static_cast<uint8_t>(s[9])) << 8);
    at = 10;
  } else if (major == 2 || major == 3) {
    if (s.size() < 12) throw bad("it is truncated in its header length");
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(s[8 + static_cast<std::size_t>(i)]);
    at = 12;
  } else {
    throw bad(fmt::format("format version {} is not 1, 2 or 3", major));
  }
  if (header_len > kMaxHeader) throw bad(fmt::format("its header is {} bytes, over the {} allowed", header_len, kMaxHeader));
  if (header_len > s.size() - at) throw bad("it is truncated in its header");
  const std::string h = s.substr(at, header_len);
  at += header_len;
  std::string descr = header_value(h, "descr", bad);
  const std::string fortran = header_value(h, "fortran_order", bad);
  const std::string shape_text = header_value(h, "shape", bad);
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'') {
    throw bad("descr " + descr + " is not a plain numeric dtype (structured and object arrays are not read)");
  }
  descr = descr.substr(1, descr.size() - 2);
  if (fortran != "False" && fortran != "True") throw bad("fortran_order is " + fortran);
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')') throw bad("shape is " + shape_text);
  std::vector<int64_t> dims;
  {
    std::string inner = shape_text.substr(1, shape_text.size() - 2);
    std::size_t p = 0;
    while (p < inner.size()) {
      while (p < inner.size() && (inner[p] == ' ' || inner[p] == ',')) ++p;
      if (p >= inner.size()) break;
      std::size_t q = p;
      while (q < inner.size() && std::isdigit(static_cast<unsigned char>(inner[q]))) ++q;
      if (q == p || q - p > 18) throw bad("shape " + shape_text + " has a dimension that is not a small integer");
      dims.push_back(std::stoll(inner.substr(p, q - p)));
      p = q;
    }
    if (dims.size() > 32) throw bad(fmt::format("rank {} is over 32", dims.size()));
  }
  if (descr.size() < 3) throw bad("dtype '" + descr + "' is not read (float16/32/64, bool, int8-64 and uint8-64 are)");
  const char order = descr[0], kind = descr[1];
  const int size = std::atoi(descr.c_str() + 2);
  const bool swap = order == '>' && size > 1;
  if (order != '<' && order != '>' && order != '|' && order != '=') throw bad("descr '" + descr + "' has no byte order");
  DType out;
  if (kind == 'f' && (size == 2 || size == 4)) out = float32;
  else if (kind == 'f' && size == 8) out = float64;
  else if ((kind == 'i' && size <= 4) || (kind == 'u' && size <= 2) || (kind == 'b' && size == 1)) out = int32;
  else if ((kind == 'i' && size == 8) || (kind == 'u' && (size == 4 || size == 8))) out = int64;
  else throw bad("dtype '" + descr + "' is not read (float16/32/64, bool, int8-64 and uint8-64 are)");
  if (size != 1 && size != 2 && size != 4 && size != 8) throw bad("descr '" + descr + "' has an odd item size");
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d > 0 && count > (s.size() / static_cast<uint64_t>(d)) + 1) throw bad("its shape holds more than the file");
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t bytes = count * static_cast<uint64_t>(size);
  if (bytes != s.size() - at) {
    throw bad(fmt::format("shape {} of {} needs {} data bytes, the file has {}", shape_text, descr, bytes, s.size() - at));
  }
  const bool is_fortran = fortran == "True";
  std::vector<int64_t> store = dims;  // Fortran order: read as the reversed shape, then transposed
  if (is_fortran) std::reverse(store.begin(), store.end());
  Tensor t = Tensor::empty(Shape(store), out, &detail::host());
  const char* src = s.data() + at;
  auto raw = [&](uint64_t i) {
    unsigned char b[8];
    std::memcpy(b, src + i * static_cast<uint64_t>(size), static_cast<std::size_t>(size));
    if (swap) std::reverse(b, b + size);
    uint64_t u = 0;
    std::memcpy(&u, b, static_cast<std::size_t>(size));
    return u;
  };
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t u = raw(i);
    switch (out) {
      case DType::float32: {
        float v;
        if (size == 2) v = half_to_float(static_cast<uint16_t>(u));
        else std::memcpy(&v, &u, 4);
        t.data<float>()[i] = v;
        break;
      }
      case DType::float64: {
        double v;
        std::memcpy(&v, &u, 8);
        t.data<double>()[i] = v;
        break;
      }
      case DType::int32: {
        int32_t v;
        if (kind == 'i') v = size == 1 ? static_cast<int8_t>(u) : size == 2 ? static_cast<int16_t>(u) : static_cast<int32_t>(u);
        else v = static_cast<int32_t>(u);
        t.data<int32_t>()[i] = v;
        break;
      }
      case DType::int64: {
        if (kind == 'u' && size == 8 && u > static_cast<uint64_t>(INT64_MAX)) {
          throw bad(fmt::format("uint64 value {} at index {} does not fit int64", u, i));
        }
        t.data<int64_t>()[i] = kind == 'u' && size == 4 ? static_cast<int64_t>(static_cast<uint32_t>(u)) : static_cast<int64_t>(u);
        break;
      }
      case DType::bool_:  // bool arrays are read as int32 (NumPy's 0/1), float16 as float32
      case DType::float16:
      case DType::bfloat16: break;
    }
  }
  if (is_fortran && dims.size() > 1) {
    std::vector<int> perm;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) perm.push_back(i);
    t = ops::transpose(t, perm).to(detail::host());
  }
  return t;
}

std::string read_file(const std::string& path, const char* fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError(fmt::format("{}: cannot open '{}': {}", fn, path, std::strerror(errno)));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

Tensor load_npy(const std::string& path) { return parse_npy(read_file(path, "load_npy"), "'" + path + "'"); }

std::map<std::string, Tensor> load_npz(const std::string& path) {
  keras::detail::ZipReadOptions o{"load_npz", ".npz (ZIP)", true};
  std::map<std::string, Tensor> out;
  for (auto& [name, bytes] : keras::detail::read_zip(path, o)) {
    std::string key = name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    out.emplace(key, parse_npy(bytes, fmt::format("entry '{}' of '{}'", name, path)));
  }
  return out;
}

void save_npy(const std::string& path, const Tensor& t) {
  const Tensor h = detail::on_host(t);
  const char* descr = h.dtype() == float32 ? "<f4" : h.dtype() == float64 ? "<f8" : h.dtype() == int32 ? "<i4" : "<i8";
  std::string shape = "(";
  for (int64_t d : h.shape().dims()) shape += std::to_string(d) + ", ";
  if (h.shape().rank() > 1) shape.resize(shape.size() - 2);
  else if (h.shape().rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(h.raw_data()), static_cast<std::size_t>(h.nbytes()));
  core::write_file_atomically(path, out, "save_npy");
}

}  // namespace osprey::data
