// Tensors: a non-owning strided view and an owning, 64-byte-aligned tensor.
//
// A TensorView is a pointer, a dtype, up to kMaxDims sizes and per-dimension strides counted in
// elements (not bytes), row-major by default: element (i0, i1, ...) lives at
// data + sum_d i_d * stride_d. Views never own memory; the caller keeps the buffer alive.
// Slicing and transposing make new views of the same memory.
//
// get()/set() read and write any dtype as float (bf16 rounded to nearest even on set); at<T>()
// gives typed access and REQUIRES that T matches the dtype. Index checks are debug-only
// (assert), so the accessors cost what a hand-written offset would.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>

#include "trex/core/arena.h"
#include "trex/core/bf16.h"

namespace trex::core {

enum class DType : uint8_t { kF32 = 0, kBF16 = 1 };

inline size_t dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }
const char* to_string(DType t);

template <class T>
constexpr DType dtype_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, bf16>, "tensor element is float or bf16");
  return std::is_same_v<T, float> ? DType::kF32 : DType::kBF16;
}

inline constexpr int kMaxDims = 4;

// Sizes of up to kMaxDims dimensions.
struct Shape {
  std::array<int64_t, kMaxDims> dims{};
  int ndim = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> sizes);  // REQUIRES: at most kMaxDims sizes, each >= 0

  int64_t operator[](int d) const { return dims[size_t(d)]; }
  int64_t numel() const;
  std::string to_string() const;  // "[2, 3, 4]"
  bool operator==(const Shape& o) const;
};

class TensorView {
 public:
  TensorView() = default;
  // Contiguous row-major view of `shape` at data.
  TensorView(void* data, DType dtype, const Shape& shape);
  // Strided view; strides in elements, one per dimension of shape.
  TensorView(void* data, DType dtype, const Shape& shape, const std::array<int64_t, kMaxDims>& strides);

  DType dtype() const { return dtype_; }
  int ndim() const { return shape_.ndim; }
  const Shape& shape() const { return shape_; }
  int64_t size(int d) const { return shape_[d]; }
  int64_t stride(int d) const { return strides_[size_t(d)]; }
  int64_t numel() const { return shape_.numel(); }
  size_t element_bytes() const { return dtype_size(dtype_); }
  // True when the elements are packed in row-major order with no gaps.
  bool is_contiguous() const;
  void* raw() const { return data_; }

  template <class T>
  T* data() const {
    assert(dtype_ == dtype_of<T>());
    return static_cast<T*>(data_);
  }

  // Element offset of an index, in elements from raw().
  template <class... I>
  int64_t offset(I... idx) const {
    static_assert(sizeof...(I) <= kMaxDims, "too many indices");
    assert(int(sizeof...(I)) == shape_.ndim);
    const int64_t ii[] = {int64_t(idx)..., 0};
    int64_t off = 0;
    for (int d = 0; d < int(sizeof...(I)); ++d) {
      assert(ii[d] >= 0 && ii[d] < shape_[d]);
      off += ii[d] * strides_[size_t(d)];
    }
    return off;
  }

  template <class T, class... I>
  T& at(I... idx) const {
    return data<T>()[offset(idx...)];
  }

  template <class... I>
  float get(I... idx) const {
    int64_t off = offset(idx...);
    return dtype_ == DType::kF32 ? static_cast<const float*>(data_)[off]
                                 : to_float(static_cast<const bf16*>(data_)[off]);
  }

  template <class... I>
  void set(float v, I... idx) const {
    int64_t off = offset(idx...);
    if (dtype_ == DType::kF32)
      static_cast<float*>(data_)[off] = v;
    else
      static_cast<bf16*>(data_)[off] = to_bf16(v);
  }

  // Elements [begin, end) of dimension d; same memory. REQUIRES 0 <= begin <= end <= size(d).
  TensorView slice(int d, int64_t begin, int64_t end) const;
  // Dimensions a and b swapped; same memory.
  TensorView transpose(int a, int b) const;
  // The same elements under another shape with equal numel. REQUIRES is_contiguous().
  TensorView reshape(const Shape& shape) const;

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::array<int64_t, kMaxDims> strides_{};
};

// Row-major strides for a shape, in elements.
std::array<int64_t, kMaxDims> contiguous_strides(const Shape& shape);

// An owning, contiguous tensor whose buffer starts on a 64-byte boundary. Movable, not copyable.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled.
  Tensor(DType dtype, const Shape& shape);
  static Tensor zeros(DType dtype, const Shape& shape) { return Tensor(dtype, shape); }
  // Contents uninitialised: for outputs a kernel writes in full.
  static Tensor empty(DType dtype, const Shape& shape);

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }  // NOLINT: a tensor is usable as its view
  DType dtype() const { return view_.dtype(); }
  const Shape& shape() const { return view_.shape(); }
  int64_t numel() const { return view_.numel(); }
  size_t bytes() const { return size_t(numel()) * dtype_size(dtype()); }
  template <class T>
  T* data() const {
    return view_.data<T>();
  }

 private:
  std::unique_ptr<char[], AlignedDeleter> buffer_;
  TensorView view_;
};

}  // namespace trex::core
