# The convolution problems by class from three runs (run from the repository root):
# session 32 (the fp32 standard convolutions, results.md) and session 33 (bench-21, then
# bench-7, which replaces 35, 45, 60, 61, 62, 72 and 73): python3 THIS > by_class.md
import json, math, re, collections
rows = {}
# session 32: the fp32 standard convolutions (results.md only)
hdr = None
for line in open('docs/results/conv-h100-2026-12-07/bench/results.md'):
    if line.startswith('| problem'):
        hdr = [c.strip() for c in line.split('|')]
    elif hdr and line.startswith('| ') and '_fp32' in line:
        c = [x.strip() for x in line.split('|')]
        d = dict(zip(hdr, c))
        name = d['problem']
        cls = 'conv3d' if 'conv3d' in name else 'conv1d' if 'conv1d' in name else 'conv2d'
        rows[name] = dict(run='s32', cls=cls, eager=float(d['eager ms']), compile=float(d['compile ms']),
                          best=float(d['best ms']), deploy=d['deploy'])
for run in ('bench-21', 'bench-7'):
    j = json.load(open(f'docs/results/conv-h100-2026-12-07b/{run}/results.json'))
    for p in j['problems']:
        rows[p['name']] = dict(run=run, cls=p['conv_class'], eager=p['eager_ms'], compile=p['compile_ms'],
                               best=p['best_ms'], deploy=p['deploy'])
def gm(v): return math.exp(sum(map(math.log, v)) / len(v)) if v else 0
by = collections.defaultdict(list)
for n, r in sorted(rows.items()):
    r['vs_compile'] = r['compile'] / r['best']; r['vs_base'] = min(r['eager'], r['compile']) / r['best']
    by[r['cls']].append((n, r))
print(f"{len(rows)} problems; geomean vs torch.compile {gm([r['vs_compile'] for r in rows.values()]):.2f}x, "
      f"vs the best PyTorch {gm([r['vs_base'] for r in rows.values()]):.2f}x; "
      f"faster than the best PyTorch on {sum(r['vs_base'] > 1 for r in rows.values())}")
print("| conv class | problems | vs torch.compile | vs best PyTorch | faster than both | per problem (vs torch.compile) |")
print("|---|---:|---:|---:|---:|---|")
for cls, members in sorted(by.items()):
    vc = [r['vs_compile'] for _, r in members]; vb = [r['vs_base'] for _, r in members]
    per = ", ".join(f"{n.split('_')[0]} {r['vs_compile']:.2f}x" for n, r in members)
    print(f"| {cls} | {len(members)} | {gm(vc):.2f}x | {gm(vb):.2f}x | {sum(v > 1 for v in vb)} | {per} |")
