#include "trex/train/number_pieces.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace trex::train {
namespace {

constexpr uint32_t kPiecesField = 1;      // ModelProto.pieces
constexpr uint32_t kPieceTextField = 1;   // SentencePiece.piece
constexpr uint32_t kPieceScoreField = 2;  // SentencePiece.score (float)
constexpr uint32_t kPieceTypeField = 3;   // SentencePiece.type (enum)
constexpr uint64_t kUserDefined = 4;      // SentencePiece.Type.USER_DEFINED
constexpr uint64_t kNormal = 1;           // the type's default when the field is absent

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

// Reads the wire format front to back; every read checks the bounds.
class WireReader {
 public:
  explicit WireReader(std::string_view s) : s_(s) {}
  bool done() const { return at_ >= s_.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= s_.size()) throw std::runtime_error("ModelProto: truncated varint");
      const uint8_t b = uint8_t(s_[at_++]);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::runtime_error("ModelProto: varint too long");
  }
  std::string_view bytes(uint64_t n) {
    if (n > s_.size() - at_) throw std::runtime_error("ModelProto: field runs past the end");
    std::string_view v = s_.substr(at_, size_t(n));
    at_ += size_t(n);
    return v;
  }
  // Skips a field's value of wire type `wire`.
  void skip(int wire) {
    switch (wire) {
      case kVarint: varint(); return;
      case kFixed64: bytes(8); return;
      case kLengthDelimited: bytes(varint()); return;
      case kFixed32: bytes(4); return;
      default: throw std::runtime_error("ModelProto: unsupported wire type " + std::to_string(wire));
    }
  }

 private:
  std::string_view s_;
  size_t at_ = 0;
};

}  // namespace

std::vector<std::string> frequent_numbers(const std::vector<std::string>& texts, int count, int max_digits) {
  std::unordered_map<std::string_view, int64_t> seen;
  for (const std::string& text : texts) {
    for (size_t i = 0; i < text.size();) {
      if (text[i] < '0' || text[i] > '9') {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
      if (end - i >= 2 && end - i <= size_t(max_digits)) ++seen[std::string_view(text).substr(i, end - i)];
      i = end;
    }
  }
  std::vector<std::pair<std::string_view, int64_t>> order(seen.begin(), seen.end());
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < order.size() && int(i) < count; ++i) out.emplace_back(order[i].first);
  return out;
}

std::string append_user_defined_pieces(std::string model_proto, const std::vector<std::string>& pieces) {
  for (const std::string& p : pieces) {
    std::string body;
    put_varint(body, kPieceTextField << 3 | kLengthDelimited);
    put_varint(body, p.size());
    body += p;
    put_varint(body, kPieceScoreField << 3 | kFixed32);
    body.append(4, '\0');  // 0.0f
    put_varint(body, kPieceTypeField << 3 | kVarint);
    put_varint(body, kUserDefined);
    // A repeated field's elements may follow any other field: appended, they come last in id order.
    put_varint(model_proto, kPiecesField << 3 | kLengthDelimited);
    put_varint(model_proto, body.size());
    model_proto += body;
  }
  return model_proto;
}

std::vector<std::string> user_defined_pieces(std::string_view model_proto) {
  std::vector<std::string> out;
  WireReader top(model_proto);
  while (!top.done()) {
    const uint64_t tag = top.varint();
    const int wire = int(tag & 7);
    if (tag >> 3 != kPiecesField || wire != kLengthDelimited) {
      top.skip(wire);
      continue;
    }
    WireReader piece(top.bytes(top.varint()));
    std::string_view text;
    uint64_t type = kNormal;
    while (!piece.done()) {
      const uint64_t t = piece.varint();
      const int w = int(t & 7);
      if (t >> 3 == kPieceTextField && w == kLengthDelimited)
        text = piece.bytes(piece.varint());
      else if (t >> 3 == kPieceTypeField && w == kVarint)
        type = piece.varint();
      else
        piece.skip(w);
    }
    if (type == kUserDefined) out.emplace_back(text);
  }
  return out;
}

}  // namespace trex::train
