// Copy documents: synthetic chat conversations that teach a model to copy a statement's numbers
// into a program (issue 16, bench/results/recipe/README.md).
//
// The miniature recipe's models wrote each OR family's program with invented numbers: the later
// digits of a copied number stayed at chance (bench/recipe_copy_nll.py), so the model had no
// copying mechanism. A pure copy task ("Numbers: 528 18 ... Repeat them.") is learned by the
// 64-rotary-dim model in ~600-800 steps, but the OR answer does not copy in order: it looks each
// number up by item and attribute ("shirt 29/8/88" -> `make["shirt"] ... ub=88`). So most
// documents here are keyed: a statement-like text gives 2-4 items x 2-4 attributes (and 0-2
// scalar lines) in one of three styles the OR corpus uses (a per-item table "x 1/2; y 3/4",
// "X: a 1, b 2.", "The a of x is 1."), and the answer writes them attribute by attribute, items
// shuffled, as `attr = {"y": 3, "x": 1}` or `m.addConstr(3 * x["y"] + 1 * x["x"] <= N,
// name="attr")` (N the first scalar line's number), so every number of an answer is in its statement. A third are in-order lists (the probe's task). Numbers are 1-4 digit integers
// or decimals with two places (0.93), as in the corpus.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nlohmann/json.hpp"

namespace trex::recipe {

// The generator's version, part of every copy_docs stage's cache key (recipe.cc): bump it with
// any change to what copy_document() writes for a (seed, index), or a recipe keeps the old
// documents of a stage it ran before. copy_docs_test pins a digest of the output to it.
inline constexpr const char* kCopyDocsVersion = "copy_docs 1";

// Which documents a stream holds: kMixed a third in-order and two thirds keyed (drawn per
// document), kInOrder or kKeyed only that kind. kKeyedInOrder: keyed documents whose statement is
// written attribute by attribute and whose answer keeps the statement's order, so the answer's
// numbers are the statement's in order (a step between the two; not in the mixed stream). A
// curriculum needs the kinds apart: the in-order copy is learned first, and a model that has it
// learns the keyed copy from there (session 13: straight from in-order to keyed did not form it).
enum class CopyStyle { kMixed, kInOrder, kKeyed, kKeyedInOrder };

// "mixed", "in-order", "keyed", "keyed-in-order" (a recipe's `style`); nullopt for anything else.
std::optional<CopyStyle> copy_style_named(const std::string& name);

// Document `index` of the stream `seed`: {"messages": [user, assistant]}. Deterministic on every
// platform (ordata::Rng); each document has its own stream, so N documents are the first N of
// any larger count.
nlohmann::json copy_document(uint64_t seed, uint64_t index, CopyStyle style = CopyStyle::kMixed);

// `count` documents as JSONL at `path` (a temporary name, then renamed).
void write_copy_documents(const std::string& path, long count, uint64_t seed, CopyStyle style = CopyStyle::kMixed);

}  // namespace trex::recipe
