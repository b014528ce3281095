#include "trex/core/tensor.h"

#include <cstring>
#include <stdexcept>
#include <utility>

namespace trex::core {

const char* to_string(DType t) { return t == DType::kF32 ? "fp32" : "bf16"; }

Shape::Shape(std::initializer_list<int64_t> sizes) {
  if (sizes.size() > size_t(kMaxDims)) throw std::invalid_argument("Shape: more than kMaxDims dimensions");
  for (int64_t s : sizes) {
    if (s < 0) throw std::invalid_argument("Shape: negative size");
    dims[size_t(ndim++)] = s;
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= dims[size_t(d)];
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int d = 0; d < ndim; ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(dims[size_t(d)]);
  }
  return s + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (ndim != o.ndim) return false;
  for (int d = 0; d < ndim; ++d)
    if (dims[size_t(d)] != o.dims[size_t(d)]) return false;
  return true;
}

std::array<int64_t, kMaxDims> contiguous_strides(const Shape& shape) {
  std::array<int64_t, kMaxDims> strides{};
  int64_t s = 1;
  for (int d = shape.ndim - 1; d >= 0; --d) {
    strides[size_t(d)] = s;
    s *= shape[d];
  }
  return strides;
}

TensorView::TensorView(void* data, DType dtype, const Shape& shape)
    : data_(data), dtype_(dtype), shape_(shape), strides_(contiguous_strides(shape)) {}

TensorView::TensorView(void* data, DType dtype, const Shape& shape,
                       const std::array<int64_t, kMaxDims>& strides)
    : data_(data), dtype_(dtype), shape_(shape), strides_(strides) {}

bool TensorView::is_contiguous() const {
  int64_t expect = 1;
  for (int d = shape_.ndim - 1; d >= 0; --d) {
    // A dimension of size 1 may carry any stride without leaving gaps.
    if (shape_[d] != 1 && strides_[size_t(d)] != expect) return false;
    expect *= shape_[d];
  }
  return true;
}

TensorView TensorView::slice(int d, int64_t begin, int64_t end) const {
  if (d < 0 || d >= shape_.ndim || begin < 0 || begin > end || end > shape_[d])
    throw std::out_of_range("TensorView::slice: range outside the dimension");
  TensorView v = *this;
  v.data_ = static_cast<char*>(data_) + begin * strides_[size_t(d)] * int64_t(element_bytes());
  v.shape_.dims[size_t(d)] = end - begin;
  return v;
}

TensorView TensorView::transpose(int a, int b) const {
  if (a < 0 || b < 0 || a >= shape_.ndim || b >= shape_.ndim)
    throw std::out_of_range("TensorView::transpose: no such dimension");
  TensorView v = *this;
  std::swap(v.shape_.dims[size_t(a)], v.shape_.dims[size_t(b)]);
  std::swap(v.strides_[size_t(a)], v.strides_[size_t(b)]);
  return v;
}

TensorView TensorView::reshape(const Shape& shape) const {
  if (!is_contiguous()) throw std::invalid_argument("TensorView::reshape: view is not contiguous");
  if (shape.numel() != numel())
    throw std::invalid_argument("TensorView::reshape: " + shape_.to_string() + " has " +
                                std::to_string(numel()) + " elements, " + shape.to_string() + " has " +
                                std::to_string(shape.numel()));
  return TensorView(data_, dtype_, shape);
}

Tensor Tensor::empty(DType dtype, const Shape& shape) {
  Tensor t;
  size_t bytes = size_t(shape.numel()) * dtype_size(dtype);
  t.buffer_.reset(static_cast<char*>(aligned_alloc_bytes(bytes)));
  t.view_ = TensorView(t.buffer_.get(), dtype, shape);
  return t;
}

Tensor::Tensor(DType dtype, const Shape& shape) : Tensor(empty(dtype, shape)) {
  std::memset(buffer_.get(), 0, bytes());
}

}  // namespace trex::core
