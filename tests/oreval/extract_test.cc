// Formulation extraction from completions.
#include "trex/oreval/extract.h"

#include <gtest/gtest.h>

namespace trex::oreval {
namespace {

TEST(Extract, FencedPython) {
  Extraction e = extract_formulation("Here is the model:\n```python\nimport gurobipy\nx = 1\n```\nDone.");
  EXPECT_EQ(e.kind, CodeKind::kPython);
  EXPECT_EQ(e.code, "import gurobipy\nx = 1\n");
}

TEST(Extract, LastCompleteBlockWins) {
  std::string t = "draft:\n```python\nprint(1)\n```\nfixed:\n```python\nprint(2)\n```\ntruncated:\n```python\nprint(3";
  Extraction e = extract_formulation(t);
  EXPECT_EQ(e.kind, CodeKind::kPython);
  EXPECT_EQ(e.code, "print(2)\n");
}

TEST(Extract, LpAndMpsBlocks) {
  Extraction lp = extract_formulation("```lp\nMaximize\n obj: x\nSubject To\n c: x <= 4\nEnd\n```");
  EXPECT_EQ(lp.kind, CodeKind::kLp);
  Extraction mps = extract_formulation("```\nNAME t\nROWS\n N obj\nCOLUMNS\n x obj 1\nENDATA\n```");
  EXPECT_EQ(mps.kind, CodeKind::kMps);
  Extraction unlabelled_lp = extract_formulation("```\nMinimize\n obj: x\nSubject To\n c: x >= 1\nEnd\n```");
  EXPECT_EQ(unlabelled_lp.kind, CodeKind::kLp);
}

TEST(Extract, PythonTagsOfTheReportPrompt) {
  std::string t = "<think>reasoning ``` not code</think><model>max 3x</model><python>\nfrom gurobipy import *\nm = Model()\n</python>";
  Extraction e = extract_formulation(t);
  EXPECT_EQ(e.kind, CodeKind::kPython);
  EXPECT_EQ(e.code, "\nfrom gurobipy import *\nm = Model()\n");
  Extraction fenced = extract_formulation("<python>\n```python\nx = 2\n```\n</python>");
  EXPECT_EQ(fenced.code, "x = 2\n");
}

TEST(Extract, BareLpAndBarePython) {
  Extraction lp = extract_formulation("The model is\nMaximize\n obj: 3 x + 2 y\nSubject To\n c1: x + y <= 4\nEnd\nThat is all.");
  EXPECT_EQ(lp.kind, CodeKind::kLp);
  EXPECT_EQ(lp.code.substr(0, 8), "Maximize");
  EXPECT_NE(lp.code.find("End"), std::string::npos);
  EXPECT_EQ(lp.code.find("That is all"), std::string::npos);
  Extraction py = extract_formulation("Code:\nfrom gurobipy import Model\nm = Model()\n");
  EXPECT_EQ(py.kind, CodeKind::kPython);
  EXPECT_EQ(py.code, "from gurobipy import Model\nm = Model()\n");
}

TEST(Extract, NothingToExtract) {
  EXPECT_EQ(extract_formulation("The answer is 42.").kind, CodeKind::kNone);
  EXPECT_EQ(extract_formulation("").kind, CodeKind::kNone);
  EXPECT_EQ(extract_formulation("```python\nprint(1)").kind, CodeKind::kNone);  // never closed
}

}  // namespace
}  // namespace trex::oreval
