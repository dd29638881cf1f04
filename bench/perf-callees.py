"""Callee breakdown of one function from `perf script` output.

Usage: perf script -i perf.data -F comm,ip,sym > s.txt
       python3 perf-callees.py s.txt 'validate_tool_arguments' [depth]
For every sample whose stack contains TARGET (outermost occurrence), counts the `depth` frames it
called, and prints them as % of all samples.
"""
import collections
import re
import sys

path, target = sys.argv[1], sys.argv[2]
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 1
samples=[]; cur=[]
for line in open(path):
    line=line.rstrip('\n')
    if not line.strip():
        if cur: samples.append(cur); cur=[]
        continue
    if line.startswith('\t') or line.startswith(' '):
        parts=line.strip().split(None,1)
        sym=parts[1] if len(parts)>1 else '?'
        cur.append(sym)
if cur: samples.append(cur)
def dem(s):
    s=re.sub(r'\+0x[0-9a-f]+$','',s)
    return s
total=len(samples); hit=0; c=collections.Counter()
for st in samples:
    st=[dem(s) for s in st]
    idx=[i for i,s in enumerate(st) if target in s]
    if not idx: continue
    hit+=1
    i=max(idx)  # outermost occurrence
    chain=st[max(0,i-depth):i][::-1]
    c[' > '.join(chain) if chain else '(self)']+=1
print(f"{target}: {hit}/{total} samples = {100*hit/total:.1f}%")
for k,v in c.most_common(25):
    print(f"{100*v/total:6.2f}%  {k[:230]}")
