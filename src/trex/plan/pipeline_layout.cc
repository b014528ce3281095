#include "trex/plan/pipeline_layout.h"

#include <cctype>

#include "trex/util/error.h"

namespace trex::plan {

namespace {

[[noreturn]] void refuse(const std::string& field, const std::string& why) {
  throw InputError::field("strategy." + field, why);
}

std::vector<PipelineChunk> parse_layout(const std::string& text, long layers, long mtp, long chunks) {
  std::vector<PipelineChunk> out(1);
  long next = 0, mtp_seen = 0, embeddings = 0, heads = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (std::isspace(static_cast<unsigned char>(ch))) continue;
    if (ch == '|') {
      out.emplace_back();
      out.back().first = next;
      continue;
    }
    long repeat = 1;
    if (i + 1 < text.size() && text[i + 1] == '*') {
      size_t j = i + 2;
      long n = 0;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) n = n * 10 + (text[j++] - '0');
      if (j == i + 2 || n < 1) refuse("pipeline_layout", "'*' must be followed by a positive count in \"" + text + "\"");
      repeat = n;
      i = j - 1;
    }
    PipelineChunk& c = out.back();
    switch (ch) {
      case 't': c.layers += repeat; next += repeat; break;
      case 'E': c.embedding = true; embeddings += repeat; break;
      case 'L': c.head = true; heads += repeat; break;
      case 'm': c.mtp += repeat; mtp_seen += repeat; break;
      default: refuse("pipeline_layout", std::string("unknown symbol '") + ch + "' (E, t, m, L, |, *N) in \"" + text + "\"");
    }
  }
  if (long(out.size()) != chunks)
    refuse("pipeline_layout", "names " + std::to_string(out.size()) + " chunks but pp x vpp = " + std::to_string(chunks));
  if (next != layers)
    refuse("pipeline_layout", "places " + std::to_string(next) + " transformer layers but the model has " + std::to_string(layers));
  if (embeddings != 1 || heads != 1) refuse("pipeline_layout", "must hold exactly one E and one L");
  if (mtp > 0 && mtp_seen != mtp)
    refuse("pipeline_layout", "places " + std::to_string(mtp_seen) + " MTP blocks but the run trains " + std::to_string(mtp));
  if (mtp == 0)
    for (PipelineChunk& c : out) c.mtp = 0;  // MTP not trained: its placement is moot
  return out;
}

}  // namespace

std::vector<PipelineChunk> pipeline_chunks(const LayoutSpec& spec, long layers, long mtp, long pp, long vpp) {
  long chunks = pp * vpp;
  if (!spec.layout.empty()) return parse_layout(spec.layout, layers, mtp, chunks);
  std::vector<PipelineChunk> out(static_cast<size_t>(chunks));
  long f = spec.first_stage_layers, l = spec.last_stage_layers;
  if ((f > 0 || l > 0) && chunks < 2) refuse("first_stage_layers", "needs at least two pipeline chunks");
  long middle_chunks = chunks - (f > 0 ? 1 : 0) - (l > 0 ? 1 : 0);
  long middle_layers = layers - f - l;
  if (middle_layers < 0 || (middle_chunks > 0 && middle_layers < middle_chunks) || (middle_chunks == 0 && middle_layers != 0))
    refuse("first_stage_layers", "first " + std::to_string(f) + " and last " + std::to_string(l) + " stage layers leave " +
                                     std::to_string(middle_layers) + " layers for " + std::to_string(middle_chunks) + " chunks");
  long next = 0, mid = 0;
  for (long k = 0; k < chunks; ++k) {
    PipelineChunk& c = out[size_t(k)];
    c.first = next;
    if (k == 0 && f > 0) {
      c.layers = f;
    } else if (k == chunks - 1 && l > 0) {
      c.layers = l;
    } else {
      c.layers = middle_layers / middle_chunks + (mid < middle_layers % middle_chunks ? 1 : 0);
      ++mid;
    }
    next += c.layers;
  }
  out.front().embedding = true;
  out.back().head = true;
  out.back().mtp = mtp;
  return out;
}

}  // namespace trex::plan
