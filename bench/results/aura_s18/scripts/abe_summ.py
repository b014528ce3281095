# Summary of abe.sh / abe4.sh runs: per round each arm's median step (s) and fwd+bwd CPU (s), the
# per-round ratios of arm pairs and their medians. usage: ARMS=UVET abe_summ.py DIR TAG...
import json, sys, glob, os, statistics as st
d = sys.argv[1]; tags = sys.argv[2:]; ARMS = os.environ.get('ARMS', 'UET')
R = {}
for tag in tags:
    for f in glob.glob(f'{d}/{tag}_*_r*.json'):
        _, arm, r = os.path.basename(f)[:-5].split('_')
        try: j = json.load(open(f))
        except Exception: continue
        R.setdefault(tag + '_' + r, {})[arm] = j
rounds = sorted(r for r in R if all(a in R[r] for a in ARMS))
pairs = [p for p in ['UV', 'UE', 'VE', 'UT', 'ET', 'VT'] if all(a in ARMS for a in p)]
print('complete rounds', len(rounds))
print('| round | ' + ' | '.join(f'{a} step' for a in ARMS) + ' | ' + ' | '.join(f'{p[0]}/{p[1]}' for p in pairs) + ' | ' + ' | '.join(f'{a} cpu' for a in ARMS) + ' |')
print('|' + '---|' * (1 + 2 * len(ARMS) + len(pairs)))
rat = {p: [] for p in pairs}
for r in rounds:
    s = {a: R[r][a]['median_step_s'] for a in ARMS}; c = {a: R[r][a]['median_forward_backward_cpu_s'] for a in ARMS}
    for p in pairs: rat[p].append(s[p[0]] / s[p[1]])
    print(f'| {r} | ' + ' | '.join(f'{s[a]:.3f}' for a in ARMS) + ' | ' + ' | '.join(f'{s[p[0]]/s[p[1]]:.3f}' for p in pairs) + ' | ' + ' | '.join(f'{c[a]:.3f}' for a in ARMS) + ' |')
for p, v in rat.items():
    if v: print(f'{p[0]}/{p[1]}: median {st.median(v):.3f}, {p[1]} faster in {sum(x > 1 for x in v)} of {len(v)}')
for a in ARMS:
    steps = [x for r in rounds for x in R[r][a]['step_times_s']]
    cpu = [R[r][a]['median_forward_backward_cpu_s'] for r in rounds]
    if steps: print(f'{a}: all steps median {st.median(steps):.3f} s ({len(steps)} steps), fwd+bwd CPU median {st.median(cpu):.3f} s')
