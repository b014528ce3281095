#!/usr/bin/env python3
"""Where an SFT model's loss is on held-out reference answers (issue 16): copied numbers or the rest.

    python3 bench/recipe_copy_nll.py --port PORT --model NAME --sft DIR [--rows 20]

Against a running `trex serve` of the model: for the first ROWS rows of a `trex data` corpus's SFT
view (DIR/sft/*.jsonl.zst, e.g. the recipe's held-out corpus), the user turn rendered with the
checkpoint's chat template (`/tokenize` with messages), the reference answer's tokens and `<|end|>`
appended, and `/v1/completions` with echo + logprobs scores every answer token. Each token is
counted in one class: a token holding a digit of a number that also appears in the statement (the
model must copy it), a digit of any other number (the program's own constants: lb=0, 1e-9), or
anything else; with a data block (`trex data gen --program-style statement-data`), "anything else" is
split further into the data block's other tokens (the names, each read off the words beside its
number) and the rest of the program (the formulation, written against the names). Per class: tokens, mean negative log-likelihood in nats, and the share of tokens
where the reference token is the model's most likely one (what greedy decoding would write, given
the reference so far); and the share of copied numbers whose every token is the most likely one
(comparable across tokenizers that cut numbers into different pieces).
"""
import argparse
import glob
import json
import re
import subprocess
import sys
import urllib.request

NUMBER = re.compile(r"\d+(?:\.\d+)?")
DATA_BLOCK = "# Data, in the order the statement gives it\n"  # src/trex/ordata/gurobipy.cc


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def add(s, logprob, top):
    s[0] += 1
    s[1] += -logprob
    s[2] += 1 if logprob >= max(top.values()) - 1e-6 else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--model", required=True, help="the served model's name (trex serve --name)")
    ap.add_argument("--sft", required=True, help="a trex data corpus folder (its sft/ view is read)")
    ap.add_argument("--rows", type=int, default=20)
    a = ap.parse_args()
    parts = sorted(glob.glob(a.sft + "/sft/*.jsonl.zst"))
    if not parts:
        sys.exit(f"recipe_copy_nll: {a.sft}/sft: no *.jsonl.zst parts")
    text = subprocess.run(["zstdcat"] + parts, check=True, capture_output=True, text=True).stdout
    rows = text.splitlines()[:a.rows]
    classes = ["digit of a number in the statement", "digit of another number", "other"]
    # The copied numbers split by where the token is in the number: its first token needs the model
    # to find which number of the statement comes next (a lookup by name or position); a later one
    # only needs it to continue the number it started (induction: the token after the same prefix).
    subs = ["  its first token", "  a later token"]
    others = ["  in the data block", "  in the rest of the program"]
    stats = {c: [0, 0.0, 0] for c in classes + subs + others}
    # Per copied number: is every one of its tokens the most likely one? (comparable across
    # tokenizers that cut numbers into different pieces, where per-token shares are not)
    whole = [0, 0]
    for line in rows:
        msgs = json.loads(line)["messages"]
        user, answer = msgs[0], msgs[1]["content"]
        prompt = post(a.port, "/tokenize", {"messages": [user]})["tokens"]
        # <|end|>: the token before the reopened assistant turn after a one-turn answer.
        end = post(a.port, "/tokenize", {"messages": [user, {"role": "assistant", "content": "x"}]})["tokens"][-2]
        ans = post(a.port, "/tokenize", {"prompt": answer, "add_special_tokens": False})["tokens"]
        ids = prompt + ans + [end]
        lp = post(a.port, "/v1/completions", {"model": a.model, "prompt": ids, "echo": True, "max_tokens": 0,
                                              "logprobs": 1})["choices"][0]["logprobs"]
        toks, tlp, top = lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]
        answer_text = "".join(toks[len(prompt):])
        in_statement = set(NUMBER.findall(user["content"]))
        spans = [(m.start(), m.end(), m.group()) for m in NUMBER.finditer(answer_text)]
        block = answer_text.find(DATA_BLOCK)
        block_end = answer_text.find("\n\n", block) if block >= 0 else -1
        off = 0
        number_ok = {}
        for i in range(len(prompt), len(ids)):
            c = "other"
            if any(ch.isdigit() for ch in toks[i]):
                span = next(((s, g) for s, e, g in spans if s < off + len(toks[i]) and e > off), (-1, ""))
                c = classes[0] if span[1] in in_statement else classes[1]
                if c == classes[0]:
                    first = span[0] >= off  # the number starts in this token
                    add(stats[subs[0] if first else subs[1]], tlp[i], top[i])
                    key = next(s for s, e, g in spans if s < off + len(toks[i]) and e > off)
                    number_ok[key] = number_ok.get(key, True) and tlp[i] >= max(top[i].values()) - 1e-6
            if c == "other" and block >= 0:
                add(stats[others[0] if block <= off < block_end else others[1]], tlp[i], top[i])
            off += len(toks[i])
            add(stats[c], tlp[i], top[i])
        whole[0] += sum(number_ok.values())
        whole[1] += len(number_ok)
    for c in classes[:1] + subs + classes[1:] + others:
        n, nll, top1 = stats[c]
        if n:
            print(f"{c}: {n} tokens, mean NLL {nll / n:.3f} nats, reference token most likely {top1 / n:.3f}")
        if c == subs[-1] and whole[1]:
            print(f"  copied numbers with every token most likely: {whole[0]} / {whole[1]} ({whole[0] / whole[1]:.3f})")


if __name__ == "__main__":
    main()
