#!/usr/bin/env python3
# perf_categories.py SCRIPT.txt LANE_TID LANE_TID: the samples of trex serve's threads other than
# the two decoding lanes, by what their stack holds (first match in the order below).
#   perf record -F 1999 --call-graph dwarf,16384 -p SERVER_PID -o perf.data   (during the bench)
#   perf script -i perf.data -F tid,ip,sym > SCRIPT.txt
import collections, sys
lanes = set(sys.argv[2:]); samples = []; cur = None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur: samples.append(cur); cur = None
        continue
    if not line.startswith((" ", "\t")): cur = [line.split()[0], []]
    else:
        parts = line.strip().split(None, 1)
        if cur is not None and len(parts) > 1: cur[1].append(parts[1])
if cur: samples.append(cur)
cats = [("send (tcp incl. loopback rx)", ["send_socket", "__sys_sendto"]), ("poll (select_write/read)", ["select_write", "select_read", "do_sys_poll", "__poll"]),
        ("TextStream/tokenizer decode", ["TextStream::push", "Tokenizer::decode", "TextStream::flush"]), ("Generation::next (cv wait/wake)", ["Generation::next"]),
        ("json (chunk build+dump)", ["nlohmann", "TextChunkEvent"]), ("request parse/submit/render", ["parse_chat_request", "render_prompt", "Engine::submit", "Tokenizer::encode"]),
        ("accept/read request", ["read_line", "parse_request_line", "read_headers", "accept", "read_content"]), ("malloc", ["tc_new", "operator new", "tc_delete"])]
c = collections.Counter(); other = 0
for tid, st in samples:
    if tid in lanes: continue
    other += 1; s = " | ".join(st)
    c[next((name for name, keys in cats if any(k in s for k in keys)), "rest")] += 1
print("samples: other threads", other, "lanes", sum(1 for t, _ in samples if t in lanes))
for k, v in c.most_common(): print(f"{v:5d} {100 * v / other:5.1f}% {k}")
