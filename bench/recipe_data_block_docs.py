#!/usr/bin/env python3
"""Data-block copy conversations from a statement-data corpus (issue 16, session 16 pilot).

    python3 bench/recipe_data_block_docs.py --sft DIR --out FILE [--as-corpus]

For every row of DIR/sft/*.jsonl.zst (a `trex data gen --program-style statement-data` corpus, e.g.
with configs/recipe/mini-data.toml), one conversation: the user turn is the statement with its last
line ("Write a Python program using gurobipy that solves it.") replaced by INSTRUCTION, the answer
is the program's data block alone (its `# Data, in the order the statement gives it` line and the
`name = number` lines, in a python fence). The statement's numbers are drawn at random by the
generator, so the answer's numbers can only come from copying them; the loss of an `sft` run is
then mostly on that copy (the program's formulation, which SFT rows spend most of their tokens on,
is absent). A distinct instruction keeps these answers from competing with the full programs when
both are in one SFT mixture.

Writes JSONL ({"messages": [user, assistant]}) to FILE via a temporary name; with --as-corpus, FILE
is a folder and the rows go to FILE/sft/part-00000.jsonl.zst, the layout bench/recipe_copy_nll.py
reads. Bad input (no corpus there, a row without a data block) is one line naming the folder or
row, exit 2, nothing written. Needs zstd (zstdcat).
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def fail(message):
    print(f"recipe_data_block_docs: {message}", file=sys.stderr)
    sys.exit(2)

QUESTION = "Write a Python program using gurobipy that solves it."
INSTRUCTION = "Write the statement's data as Python assignments, in the order the statement gives it."
DATA_BLOCK = "# Data, in the order the statement gives it\n"  # src/trex/ordata/gurobipy.cc


def convert(line, where):
    msgs = json.loads(line)["messages"]
    user, answer = msgs[0]["content"], msgs[1]["content"]
    if not user.endswith(QUESTION):
        fail(f"{where}: the user turn does not end with the program question")
    start = answer.find(DATA_BLOCK)
    end = answer.find("\n\n", start)
    if start < 0 or end < 0:
        fail(f"{where}: no data block (not a --program-style statement-data corpus?)")
    block = answer[start:end + 1]
    return {"messages": [{"role": "user", "content": user[:-len(QUESTION)] + INSTRUCTION},
                         {"role": "assistant", "content": "```python\n" + block + "```"}]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sft", required=True, help="a statement-data trex data corpus folder (its sft/ view is read)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--as-corpus", action="store_true", help="write OUT/sft/part-00000.jsonl.zst")
    a = ap.parse_args()
    parts = sorted(glob.glob(a.sft + "/sft/*.jsonl.zst"))
    if not parts:
        fail(f"{a.sft}/sft: no *.jsonl.zst parts")
    text = subprocess.run(["zstdcat"] + parts, check=True, capture_output=True, text=True).stdout
    rows = [json.dumps(convert(line, f"{a.sft}/sft row {i + 1}")) for i, line in enumerate(text.splitlines())]
    body = ("\n".join(rows) + "\n").encode()
    path = a.out
    if a.as_corpus:
        os.makedirs(a.out + "/sft", exist_ok=True)
        path = a.out + "/sft/part-00000.jsonl.zst"
        body = subprocess.run(["zstd", "-q", "-c"], input=body, check=True, capture_output=True).stdout
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(body)
    os.replace(tmp, path)
    print(f"{len(rows)} conversations -> {path}")


if __name__ == "__main__":
    main()
