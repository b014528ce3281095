#include "trex/serve/piece_texts.h"

#include <string>

namespace trex::serve {

PieceTexts::PieceTexts(const train::Tokenizer& tok) : tok_(tok) {
  const int n = tok.vocab_size();
  texts_.resize(size_t(n));
  bytes_.assign(size_t(n), -1);
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_byte(id))
      bytes_[size_t(id)] = int16_t(std::stoul(tok.piece(id).substr(3, 2), nullptr, 16));  // "<0xE2>"
    else
      texts_[size_t(id)] = tok.decode({id});
  }
}

std::string PieceTexts::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    // A byte piece (decoded with its neighbours as UTF-8) or an id the tokenizer refuses.
    if (size_t(id) >= texts_.size() || bytes_[size_t(id)] >= 0) return tok_.decode(ids);
    out += texts_[size_t(id)];
  }
  return out;
}

}  // namespace trex::serve
