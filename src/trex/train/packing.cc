#include "trex/train/packing.h"

#include "trex/core/trace.h"
#include "trex/util/error.h"

namespace trex::train {

nlohmann::json DataPosition::to_json() const {
  nlohmann::json j = {{"mixture", mixture.to_json()}, {"documents", documents}, {"truncated", truncated},
                      {"padding", padding}};
  if (!lookahead.empty()) {
    nlohmann::json l = nlohmann::json::array();
    for (const DocumentRef& r : lookahead) l.push_back({r.source, r.doc});
    j["lookahead"] = l;
  }
  if (pending)
    j["pending"] = {{"source", pending_doc.source}, {"doc", pending_doc.doc}, {"offset", pending_offset}};
  else
    j["pending"] = nullptr;
  return j;
}

DataPosition DataPosition::from_json(const nlohmann::json& j, size_t sources, const std::string& field) {
  DataPosition p;
  try {
    p.mixture = MixturePosition::from_json(j.at("mixture"), sources, field + ".mixture");
    p.documents = j.at("documents").get<int64_t>();
    // Absent in checkpoints written before whole packing (cut packing has neither).
    p.truncated = j.value("truncated", int64_t(0));
    p.padding = j.value("padding", int64_t(0));
    // Only first-fit packing has a lookahead.
    if (j.contains("lookahead"))
      for (const nlohmann::json& r : j.at("lookahead")) {
        DocumentRef ref;
        ref.source = r.at(0).get<size_t>();
        ref.doc = r.at(1).get<size_t>();
        if (ref.source >= sources) throw InputError::field(field, "lookahead source out of range");
        p.lookahead.push_back(ref);
      }
    const nlohmann::json& pend = j.at("pending");
    if (!pend.is_null()) {
      p.pending = true;
      p.pending_doc.source = pend.at("source").get<size_t>();
      p.pending_doc.doc = pend.at("doc").get<size_t>();
      p.pending_offset = pend.at("offset").get<int64_t>();
      if (p.pending_doc.source >= sources) throw InputError::field(field, "pending source out of range");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError::field(field, std::string("malformed data position: ") + e.what());
  }
  return p;
}

Packer::Packer(const std::vector<Source>* sources, const Tokenizer* tok, uint64_t seed, int64_t seq, int64_t rows,
               Mode mode)
    : sources_(sources),
      tok_(tok),
      seq_(seq),
      rows_(rows),
      mode_(mode),
      mixture_(sources, seed),
      per_source_(sources->size(), 0) {
  if (seq < 2 || rows < 1) throw std::logic_error("Packer: seq >= 2 and rows >= 1 required");
}

const TokenizedDoc& Packer::document(const DocumentRef& ref) {
  if (ref.source != cached_ref_.source || ref.doc != cached_ref_.doc) {
    cached_ = (*sources_)[ref.source].tokenize(ref.doc, *tok_);
    cached_ref_ = ref;
  }
  return cached_;
}

model::Batch Packer::next() {
  TREX_TRACE(kData, "pack_batch");
  model::Batch b;
  b.tokens = seq_ * rows_;
  b.ids.reserve(size_t(b.tokens));
  b.targets.reserve(size_t(b.tokens));
  for (int64_t r = 0; r < rows_; ++r) {
    if (mode_ == Mode::kFirstFit) {
      fill_row_first_fit(b);
      continue;
    }
    int64_t room = seq_;
    while (room > 0) {
      if (!pending_) {
        pending_doc_ = mixture_.next();
        pending_offset_ = 0;
        pending_ = true;
        ++documents_;
        ++per_source_[pending_doc_.source];
      }
      const TokenizedDoc& d = document(pending_doc_);
      const int64_t full = int64_t(d.ids.size());
      int64_t len = full;
      if (mode_ == Mode::kWhole) {
        if (len > seq_) {  // its first seq tokens fill a row of their own
          if (room < seq_) {
            pad(b, room);
            break;
          }
          ++truncated_;
          len = seq_;
        } else if (len > room) {  // starts the next row
          pad(b, room);
          break;
        }
      }
      int64_t take = std::min(room, len - pending_offset_);
      b.docs.push_back({int64_t(b.ids.size()), take});
      for (int64_t i = 0; i < take; ++i) {
        int64_t p = pending_offset_ + i;
        b.ids.push_back(d.ids[size_t(p)]);
        bool counted = p + 1 < full && d.loss[size_t(p + 1)];
        b.targets.push_back(counted ? d.ids[size_t(p + 1)] : -1);
      }
      pending_offset_ += take;
      room -= take;
      if (pending_offset_ >= len) pending_ = false;
    }
  }
  return b;
}

void Packer::fill_row_first_fit(model::Batch& b) {
  int64_t room = seq_;
  while (room > 0) {
    while (lookahead_.size() < kLookahead) {
      DocumentRef ref = mixture_.next();
      lookahead_.emplace_back(ref, (*sources_)[ref.source].tokenize(ref.doc, *tok_));
    }
    // The oldest document that fits; one longer than seq needs a row of its own.
    size_t pick = lookahead_.size();
    for (size_t i = 0; i < lookahead_.size() && pick == lookahead_.size(); ++i)
      if (std::min<int64_t>(int64_t(lookahead_[i].second.ids.size()), seq_) <= room) pick = i;
    if (pick == lookahead_.size()) {
      pad(b, room);
      return;
    }
    const TokenizedDoc& d = lookahead_[pick].second;
    int64_t len = int64_t(d.ids.size());
    if (len > seq_) {
      ++truncated_;
      len = seq_;
    }
    place(b, d, len);
    ++documents_;
    ++per_source_[lookahead_[pick].first.source];
    room -= len;
    lookahead_.erase(lookahead_.begin() + std::ptrdiff_t(pick));
  }
}

void Packer::place(model::Batch& b, const TokenizedDoc& d, int64_t n) {
  const int64_t full = int64_t(d.ids.size());
  b.docs.push_back({int64_t(b.ids.size()), n});
  for (int64_t p = 0; p < n; ++p) {
    b.ids.push_back(d.ids[size_t(p)]);
    bool counted = p + 1 < full && d.loss[size_t(p + 1)];
    b.targets.push_back(counted ? d.ids[size_t(p + 1)] : -1);
  }
}

void Packer::pad(model::Batch& b, int64_t n) {
  b.docs.push_back({int64_t(b.ids.size()), n});
  b.ids.insert(b.ids.end(), size_t(n), tok_->eos_id());
  b.targets.insert(b.targets.end(), size_t(n), -1);
  padding_ += n;
}

DataPosition Packer::position() const {
  DataPosition p;
  p.mixture = mixture_.position();
  p.pending = pending_;
  p.pending_doc = pending_doc_;
  p.pending_offset = pending_offset_;
  p.documents = documents_;
  p.truncated = truncated_;
  p.padding = padding_;
  for (const auto& l : lookahead_) p.lookahead.push_back(l.first);
  return p;
}

void Packer::restore(const DataPosition& pos) {
  mixture_.restore(pos.mixture);
  pending_ = pos.pending;
  pending_doc_ = pos.pending_doc;
  pending_offset_ = pos.pending_offset;
  documents_ = pos.documents;
  truncated_ = pos.truncated;
  padding_ = pos.padding;
  lookahead_.clear();
  for (const DocumentRef& ref : pos.lookahead) {
    if (ref.doc >= (*sources_)[ref.source].size())
      throw InputError::field("data_position.lookahead", "refers to a document the sources do not have");
    lookahead_.emplace_back(ref, (*sources_)[ref.source].tokenize(ref.doc, *tok_));
  }
  if (pending_ && (pending_doc_.source >= sources_->size() || pending_doc_.doc >= (*sources_)[pending_doc_.source].size()))
    throw InputError::field("data_position.pending", "refers to a document the sources do not have");
}

}  // namespace trex::train
