#!/usr/bin/env python3
"""Quote-then-assign copy conversations from a statement-data corpus (issue 16, session 17 pilot).

    python3 bench/recipe_quote_docs.py --sft DIR --out FILE [--as-corpus]

Sessions 12-16 found that the small dense model does not learn to copy a statement's number into
a `name = number` line: the number sits 100-600 tokens back behind a key (its row and column
words) that takes two hops to find, and its later digits stay at chance. These conversations
split that copy into two the model can learn: before each `name = number` line of the data block,
a comment quotes the statement verbatim from just after the previous number up to and including
this one (line breaks as spaces). The quotes together are the statement's text in order (an
in-order copy of text, which an induction-style head continues from where the last quote ended),
and each number is then copied from the end of the line just written (a local copy).

    ```python
    # Data, quoted from the statement
    # Tinker Toys makes ... The week offers 549
    moulding_time_max = 549
    #  hours of moulding time. The week offers 456
    painting_time_max = 456
    ```

The user turn is the statement with INSTRUCTION as its last line; with --program, the conversation
is the corpus row itself (the program question, the whole program) with its data block quoted. Writes JSONL
({"messages": [user, assistant]}) to FILE via a temporary name; with --as-corpus FILE is a folder
and the rows go to FILE/sft/part-00000.jsonl.zst (the layout bench/recipe_copy_nll.py reads).
Bad input (no corpus, a row without a data block, a data number the statement does not give in
order) is one line naming the folder or row, exit 2, nothing written. Needs zstd.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

QUESTION = "Write a Python program using gurobipy that solves it."
INSTRUCTION = "Write the statement's data as Python assignments, each after the words of the statement that give it."
DATA_BLOCK = "# Data, in the order the statement gives it\n"  # src/trex/ordata/gurobipy.cc
QUOTED = "# Data, quoted from the statement\n"
ASSIGNMENT = re.compile(r"^([a-z_][a-z0-9_]*) = (-?[0-9]+(?:\.[0-9]+)?)$")
NUMBER = re.compile(r"(?<![A-Za-z_0-9.])[0-9]+(?:\.[0-9]+)?(?![0-9])")


def fail(message):
    print(f"recipe_quote_docs: {message}", file=sys.stderr)
    sys.exit(2)


def convert(line, where, program):
    msgs = json.loads(line)["messages"]
    user, answer = msgs[0]["content"], msgs[1]["content"]
    if not user.endswith(QUESTION):
        fail(f"{where}: the user turn does not end with the program question")
    statement = user[:-len(QUESTION)]
    start = answer.find(DATA_BLOCK)
    end = answer.find("\n\n", start)
    if start < 0 or end < 0:
        fail(f"{where}: no data block (not a --program-style statement-data corpus?)")
    lines = answer[start + len(DATA_BLOCK):end].split("\n")
    spans = [(m.start(), m.end(), m.group(0)) for m in NUMBER.finditer(statement)]
    out, at, s = [QUOTED], 0, 0
    for l in lines:
        m = ASSIGNMENT.match(l)
        if not m:
            fail(f"{where}: data line '{l}' is not 'name = number'")
        value = float(m.group(2))
        while s < len(spans) and float(spans[s][2]) != value:
            s += 1
        if s == len(spans):
            fail(f"{where}: {m.group(1)} = {m.group(2)} is not a number of the statement after offset {at}")
        quote = statement[at:spans[s][1]].replace("\n", " ")
        out.append(f"# {quote}\n{l}\n")
        at = spans[s][1]
        s += 1
    if program:  # the whole program with its data block quoted, asked as the SFT rows ask
        return {"messages": [{"role": "user", "content": user},
                             {"role": "assistant", "content": answer[:start] + "".join(out) + answer[end + 1:]}]}
    return {"messages": [{"role": "user", "content": statement + INSTRUCTION},
                         {"role": "assistant", "content": "```python\n" + "".join(out) + "```"}]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sft", required=True, help="a statement-data trex data corpus folder (its sft/ view is read)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--as-corpus", action="store_true", help="write OUT/sft/part-00000.jsonl.zst")
    ap.add_argument("--program", action="store_true",
                    help="keep the whole program (its data block quoted) and the program question")
    a = ap.parse_args()
    parts = sorted(glob.glob(a.sft + "/sft/*.jsonl.zst"))
    if not parts:
        fail(f"{a.sft}/sft: no *.jsonl.zst parts")
    text = subprocess.run(["zstdcat"] + parts, check=True, capture_output=True, text=True).stdout
    rows = [json.dumps(convert(line, f"{a.sft}/sft row {i + 1}", a.program)) for i, line in enumerate(text.splitlines())]
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
