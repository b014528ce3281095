#!/usr/bin/env python3
"""What the recipe's held-out completions fail on (issue 16, session 17).

Pass@1 has been 0/60 for every model; `trex eval run` names each failure's class (syntax,
runtime, wrong objective), not its cause. This script compares each completion of a
statement-data model (`trex data gen --program-style statement-data`: the program opens with a
data block, one `name = number` line per number of the statement, in the statement's order) with
the item's reference program and says, per item:

- stopped: the completion closed its code fence (the model ended it) rather than running on to
  `max_tokens`; loop: some line of it is repeated 3 or more times.
- names: the share of the reference's data-block names that the completion's data block has.
- values: of the names both have, the share with the reference's value (the copy itself).
- by position: of the reference's data lines, the share whose value the completion's line at the
  same position has (as text; a skipped or repeated line shifts every later one off). Whatever
  the names, this is how much of the statement's numbers came out in the statement's order, the
  measure of the session 19 number-slot pilot.
- from statement: the share of the completion's data values that are numbers of the statement
  at all (copied from somewhere, or invented).
- keys: the share of the reference's quoted keys (the items, e.g. steam["boiler_nova"]) the
  completion uses anywhere: the item names are copied from the statement too.

A data block may also be quoted (bench/recipe_quote_docs.py --program: a comment quoting the
statement before each line); the quotes are skipped and the spliced blocks are written unquoted.

It also writes two spliced completion files for `trex eval run`, so that the cost of each skill
is measured, not guessed:
- reference-data.jsonl: the reference's data block followed by the completion's own program
  after its data block: Pass@1 if the copy were perfect and the formulation the model's.
- reference-program.jsonl: the completion's data block followed by the reference's program:
  Pass@1 if the formulation were perfect and the copy the model's.

Usage:
  recipe_failure_kinds.py --bench B.jsonl --reference REF.jsonl --completions C.jsonl
                          [--results R.jsonl] --out DIR
Bad input (a missing file, a line that is not JSON, a row without its field, a reference
without a data block) is one line naming the file and line, exit 2, and nothing written.
"""
import argparse
import json
import os
import re
import sys
import tempfile

NUMBER = re.compile(r"(?<![A-Za-z_0-9.])-?[0-9]+(?:\.[0-9]+)?(?![0-9])")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) = (-?[0-9]+(?:\.[0-9]+)?)\s*$")
KEY = re.compile(r"\[\"([A-Za-z0-9_]+)\"\]")
DATA_HEADER = "# Data, in the order the statement gives it"
QUOTED_HEADER = "# Data, quoted from the statement"  # bench/recipe_quote_docs.py --program


class BadInput(Exception):
    pass


def read_jsonl(path, fields):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise BadInput(f"{path}:{n}: not JSON ({e.msg})")
                for field in fields:
                    if field not in row:
                        raise BadInput(f"{path}:{n}: no field '{field}'")
                rows.append((n, row))
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})")
    return rows


def code_of(completion):
    """The text inside the first ```python fence (to its end if the fence never closes)."""
    start = completion.find("```python\n")
    if start < 0:
        return completion, False
    body = completion[start + len("```python\n"):]
    end = body.find("```")
    return (body, False) if end < 0 else (body[:end], True)


def split_data_block(code):
    """(text before the block incl. its header, [(name, value)], text after the block)."""
    lines = code.split("\n")
    try:
        h = next(i for i, l in enumerate(lines) if l.strip() in (DATA_HEADER, QUOTED_HEADER))
    except StopIteration:
        return None
    quoted = lines[h].strip() == QUOTED_HEADER
    pairs = []
    i = h + 1
    while i < len(lines):
        m = ASSIGNMENT.match(lines[i])
        if not m and quoted and lines[i].startswith("# "):
            i += 1  # a quote of the statement before its number
            continue
        if not m:
            break
        pairs.append((m.group(1), m.group(2)))
        i += 1
    return "\n".join(lines[:h + 1]), pairs, "\n".join(lines[i:])


def same_number(a, b):
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def share(k, n):
    return None if n == 0 else k / n


def kinds(question, reference, completion):
    ref_code, _ = code_of(reference)
    ref = split_data_block(ref_code)
    code, stopped = code_of(completion)
    lines = [l for l in code.split("\n") if l.strip()]
    most = max((lines.count(l) for l in set(lines)), default=0)
    got = split_data_block(code)
    pairs = got[1] if got else []
    ref_pairs = ref[1]
    ref_values = {}
    for name, value in ref_pairs:
        ref_values.setdefault(name, value)
    own = {}
    for name, value in pairs:
        own.setdefault(name, value)
    both = [n for n in ref_values if n in own]
    statement_numbers = set(NUMBER.findall(question))
    ref_keys = set(KEY.findall(ref[2]))
    return {
        "stopped": stopped,
        "loop": most >= 3,
        "data_lines": len(pairs),
        "reference_data_lines": len(ref_pairs),
        "names": share(len(both), len(ref_values)),
        "values": share(sum(same_number(own[n], ref_values[n]) for n in both), len(both)),
        "by_position": share(sum(i < len(pairs) and pairs[i][1] == v for i, (_, v) in enumerate(ref_pairs)), len(ref_pairs)),
        "from_statement": share(sum(any(same_number(v, s) for s in statement_numbers) for _, v in pairs), len(pairs)),
        "keys": share(sum(f'"{k}"' in code for k in ref_keys), len(ref_keys)),
    }, ref, got


def fence(code):
    return "```python\n" + code.rstrip("\n") + "\n```"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--reference", required=True, help="reference completions (id, completion), statement-data style")
    ap.add_argument("--completions", required=True, help="the model's completions (trex eval gen)")
    ap.add_argument("--results", help="trex eval run's results.jsonl for the completions (adds each class)")
    ap.add_argument("--id-field", default="id")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        bench = {r[a.id_field]: r for _, r in read_jsonl(a.bench, [a.id_field, "question"])}
        refs = {}
        for n, r in read_jsonl(a.reference, ["id", "completion"]):
            if split_data_block(code_of(r["completion"])[0]) is None:
                raise BadInput(f"{a.reference}:{n}: reference '{r['id']}' has no data block ('{DATA_HEADER}')")
            refs[r["id"]] = r["completion"]
        comps = read_jsonl(a.completions, ["id", "completion"])
        classes = {}
        if a.results:
            for _, r in read_jsonl(a.results, ["id", "class"]):
                classes[r["id"]] = r["class"]
        items = []
        spliced_data, spliced_program = [], []
        for n, c in comps:
            if c["id"] not in bench:
                raise BadInput(f"{a.completions}:{n}: id '{c['id']}' is not in {a.bench}")
            if c["id"] not in refs:
                raise BadInput(f"{a.completions}:{n}: id '{c['id']}' has no reference in {a.reference}")
            k, ref, got = kinds(bench[c["id"]]["question"], refs[c["id"]], c["completion"])
            k["id"] = c["id"]
            k["class"] = classes.get(c["id"])
            items.append(k)
            ref_block = ref[0] + "\n" + "\n".join(f"{x} = {v}" for x, v in ref[1]) + "\n"
            own_after = got[2] if got else ""
            spliced_data.append({"id": c["id"], "sample": c.get("sample", 0), "completion": fence(ref_block + own_after)})
            own_block = (got[0] + "\n" + "\n".join(f"{x} = {v}" for x, v in got[1]) + "\n") if got else ref[0] + "\n"
            spliced_program.append({"id": c["id"], "sample": c.get("sample", 0), "completion": fence(own_block + ref[2])})
    except BadInput as e:
        print(f"recipe_failure_kinds: {e}", file=sys.stderr)
        return 2

    os.makedirs(a.out, exist_ok=True)
    for name, rows in (("kinds.jsonl", items), ("reference-data.jsonl", spliced_data),
                       ("reference-program.jsonl", spliced_program)):
        fd, tmp = tempfile.mkstemp(dir=a.out, prefix="." + name)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        os.replace(tmp, os.path.join(a.out, name))

    def mean(key):
        xs = [i[key] for i in items if i[key] is not None]
        return f"{sum(xs) / len(xs):.3f} (of {len(xs)})" if xs else "-"

    n = len(items)
    print(f"items {n}")
    print(f"stopped (closed the fence) {sum(i['stopped'] for i in items)}; loop (a line 3+ times) {sum(i['loop'] for i in items)}")
    print(f"data lines: completion median {sorted(i['data_lines'] for i in items)[n // 2] if n else 0}, "
          f"reference median {sorted(i['reference_data_lines'] for i in items)[n // 2] if n else 0}")
    for key in ("names", "values", "by_position", "from_statement", "keys"):
        print(f"{key} {mean(key)}")
    right = sum(round(i["by_position"] * i["reference_data_lines"]) for i in items if i["by_position"] is not None)
    lines_all = sum(i["reference_data_lines"] for i in items)
    print(f"data values right by position, all items: {right}/{lines_all}"
          f" = {right / lines_all:.3f}" if lines_all else "data values right by position: -")
    if a.results:
        counts = {}
        for i in items:
            counts[i["class"]] = counts.get(i["class"], 0) + 1
        print("classes " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
