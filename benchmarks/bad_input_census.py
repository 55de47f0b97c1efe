"""Bad-input census (issue 19): every command and option of the live command tree driven with classes of
hostile values, hostile files and unwritable output paths, in-process (``tests/cli_run.invoke``), under a
6 GB address-space cap. Prints, per class: cases, exit codes, tracebacks, clobbered files (an existing file
changed by a run that exited 2), temporary files left behind and runs that ran out of memory; then every
case that did not exit 2 (some huge-but-finite values are valid input).

    PYTHONPATH=src python benchmarks/bad_input_census.py      # under a minute; Linux (resource.RLIMIT_AS)
"""
import collections
import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
from cli_run import CMD, invoke  # noqa: E402

D = tempfile.mkdtemp(prefix="llmecon-census-")
os.makedirs(f"{D}/folder.csv")
files = {
 "not_utf8.csv": b"a,b\n\xff\xfe,1\n", "latin1.json": b'{"hidden_size": "\xe9"}', "bom.json": b"\xef\xbb\xbf{}",
 "deep.json": b"[" * 100000 + b"]" * 100000, "deepobj.json": b'{"a":' * 100000 + b"1" + b"}" * 100000,
 "deep.toml": b"a = " + b"[" * 100000 + b"]" * 100000, "deeptab.toml": b"a = " + b"{b = " * 5000 + b"1" + b"}" * 5000,
 "empty.csv": b"", "empty.toml": b"", "empty.json": b"", "nul.csv": b"a,b\n1,\x002\n", "crlf.csv": b"a,b\r\n1,2\r\n",
 "bigfield.csv": b'a\n"' + b"x" * 200000 + b'"\n',
 "huge.json": json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 10**30, "num_hidden_layers": 2,
                          "num_attention_heads": 2, "vocab_size": 10, "intermediate_size": 4}).encode(),
 "bigint.json": json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 10**12,
                          "num_attention_heads": 32, "vocab_size": 10, "intermediate_size": 4}).encode(),
 "nan.json": b'{"architectures": ["LlamaForCausalLM"], "hidden_size": NaN, "num_hidden_layers": 2}',
 "list.json": b"[1,2]", "str.json": b'"x"',
 "neg.json": b'{"hidden_size": -5, "num_hidden_layers": 2, "num_attention_heads": 2}',
 "trace_nan.csv": b"arrival_s,prompt_tokens,output_tokens\nnan,10,10\n",
 "trace_neg.csv": b"arrival_s,prompt_tokens,output_tokens\n0,-10,10\n",
 "trace_huge.csv": b"arrival_s,prompt_tokens,output_tokens\n0,100000000,10\n",
 "trace_1e400.csv": b"arrival_s,prompt_tokens,output_tokens\n1e400,10,10\n",
 "trace_deep.jsonl": b"[" * 100000 + b"]" * 100000 + b"\n",
 "trace_list.jsonl": b"[1,2]\n", "trace_bad.jsonl": b"{\n",
 "cases_nan.csv": b"model,system,phase,batch,context\nllama-3.1-8b,hgx-h100,decode,nan,1024\n",
 "cases_inf.csv": b"model,system,phase,batch,context\nllama-3.1-8b,hgx-h100,decode,1,1e400\n",
 "cases_tp0.csv": b"model,system,phase,batch,context,tp\nllama-3.1-8b,hgx-h100,decode,1,1024,0\n",
 "meas_tp3.csv": b"kind,model,system,batch,context,tp,measured_s\ndecode,llama-3.1-8b,hgx-h100,1,4096,3,0.05\n",
 "meas_neg.csv": b"kind,accelerator,bytes,measured_s\ncopy,h100-sxm,-1,0.001\n",
 "spec_bignum.toml": (b'[analytic]\nmodels=["llama-3.1-8b"]\nsystems=["hgx-h100"]\nphases=["decode"]\n'
                      b'batches={start=1,stop=10,num=1000000000000}\ncontexts=[1]\n'),
 "spec_bigchunk.toml": (b'chunk_points=1000000000000\n[analytic]\nmodels=["llama-3.1-8b"]\nsystems=["hgx-h100"]\n'
                        b'phases=["decode"]\nbatches=[1]\ncontexts=[1]\n'),
 "spec_big.toml": (b'[analytic]\nmodels=["llama-3.1-8b"]\nsystems=["hgx-h100"]\nplans="smallest"\nphases=["decode"]\n'
                   b'batches={start=1,stop=1000000,num=100000}\ncontexts={start=1,stop=1000000,num=100000}\n'),
 "spec_rate.toml": (b'[simulation]\nmodels=["llama-3.1-8b"]\nsystems=["hgx-h100"]\npolicies=["continuous"]\n'
                    b'workloads=[{rate=1e12, duration=1e6}]\n'),
 "spec_nan.toml": (b'[analytic]\nmodels=["llama-3.1-8b"]\nsystems=["hgx-h100"]\nphases=["decode"]\n'
                   b'batches=[nan]\ncontexts=[1]\n'),
 "prof_inf.toml": b'name="x"\naccelerators=["h100-sxm"]\n[gemm]\nbf16=inf\n',
 "existing.csv": b"keep\n", "existing.png": b"keep\n", "existing.svg": b"keep\n", "existing.html": b"keep\n",
 "existing.toml": b"keep\n", "existing.parquet": b"keep\n",
}
for n, b in files.items():
    open(f"{D}/{n}", "wb").write(b)
os.symlink(f"{D}/loop", f"{D}/loop")
PATHS = [f"{D}/{n}" for n in files] + [f"{D}/folder.csv", f"{D}/missing/x.csv", f"{D}/existing.csv/x.csv", D,
         f"{D}/loop", f"{D}/" + "n" * 300 + ".csv", "/proc/self/status", "/dev/null"]
VALUES = {  # class -> values that are bad for any option they are given to
 "non-finite": ["nan", "inf", "-inf", "NaN", "+inf", "1e400", "-1e400"],
 "not a number": ["x", "1,5", "1_000x", "0x1p3z", "--", "é", "\u202e1", "١٢٣x", "a" * 500],
 "empty/blank": ["", " ", "\t"],
 "negative": ["-1", "-0.5", "-99999999999999999999"],
 "absurdly large": ["99999999999999999999999", "1e300"],
}

def leaves(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if subs:
        for n, s in sorted(subs.items()):
            if not path and n in ("web", "measure"):
                continue
            yield from leaves(s, path + (n,))
    else:
        opts = [max(p.opts, key=len) for p in cmd.params
                if getattr(p, "opts", None) and not getattr(p, "is_flag", False)
                and max(p.opts, key=len).startswith("--") and max(p.opts, key=len) not in ("--help",)]
        arg = any(type(p).__name__ == "TyperArgument" for p in cmd.params)
        yield path, opts, arg

BASE = {"simulate": ["-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "5"], "train": [],
        "plan": ["--systems", "hgx-h100"]}
REQ = {"cost": ["--price-per-chip-hour", "2"], "cache": ["--price-per-chip-hour", "2"],
       "prices infer": ["--provider", "google", "--model", "gemini-2.5-pro"]}
cases = []
for path, opts, arg in leaves(CMD):
    key = " ".join(path)
    base = list(path) + BASE.get(path[0], []) + REQ.get(key, [])
    good_arg = {"model": ["llama-3.1-8b"], "predict": [f"{D}/cases_nan.csv"], "calibrate": [f"{D}/meas_neg.csv"],
                "validate": [f"{D}/meas_tp3.csv"],
                "sweep": [f"{D}/spec_nan.toml", "--out", f"{D}/o.parquet"]}.get(path[0], [])
    for opt in opts:
        for cls, vals in VALUES.items():
            for v in vals:
                cases.append((cls, base + good_arg + [opt, v]))
    if arg:
        for p in PATHS:
            extra = ["--out", f"{D}/o.parquet"] if path[0] == "sweep" else []
            cases.append(("hostile file (positional)", list(path) + [p] + extra))
for opt_cmd in (["analyze", "--model"], ["analyze", "--profile"], ["simulate", "--trace"], ["model"],
                ["step", "--model"]):
    for p in PATHS:
        cases.append(("hostile file (option)", opt_cmd + [p]))
for outcmd in (["simulate", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "5", "--seed", "-1",
                "--requests-out"],
               ["simulate", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "5", "--prompt", "999999999",
                "--plot"],
               ["analyze", "--context", "nan", "--report"], ["batch", "--tp", "0", "--plot"],
               ["train", "--tp", "0", "--plot"],
               ["overtrain", "--active-params", "-1", "--plot"], ["calibrate", f"{D}/not_utf8.csv", "--out"],
               ["predict", f"{D}/cases_nan.csv", "--out"], ["sweep", f"{D}/spec_nan.toml", "--out"],
               ["lecture", "--plot-bad", "--out"], ["context", "--tp", "0", "--plot"],
               ["moe", "--max-ep", "0", "--plot"],
               ["plan", "--max-chips", "0", "--plot"]):
    for p in PATHS + ["\x00.csv"]:
        cases.append(("bad run with an output path", outcmd + [p]))
extra = [["simulate", "--rate", "1e9", "--duration", "1"], ["simulate", "--duration", "1e12"],
         ["simulate", "--requests", "0"],
         ["simulate", "--seed", "-1"], ["simulate", "--tau", "1", "--requests", "5"],
         ["simulate", "--duration", "5", "--requests", "5"],
         ["simulate", "--requests", "20", "--replicas", "999999999"],
         ["simulate", "--requests", "20", "--batch-cap", "99999999"],
         ["simulate", "--requests", "20", "--class", "a=999999999:999999999"],
         ["simulate", "--requests", "5", "--max-memory", "0B"],
         ["analyze", "--tp", "0"], ["analyze", "--ep", "0"], ["analyze", "--pp", "0"], ["analyze", "--context", "0"],
         ["step", "--phase", "sideways"], ["step", "--tp", "3", "-m", "llama-3.1-8b"],
         ["train", "--model", "llama-3.1-70b", "--tp", "1", "--gpus", "8"],
         ["sweep", f"{D}/spec_big.toml", "--out", f"{D}/o.parquet"],
         ["sweep", f"{D}/spec_rate.toml", "--out", f"{D}/o.parquet"],
         ["sweep", f"{D}/spec_bigchunk.toml", "--out", f"{D}/o.parquet"],
         ["sweep", f"{D}/spec_bignum.toml", "--out", f"{D}/o.parquet"],
         ["simulate", "--trace", f"{D}/trace_huge.csv"], ["simulate", "--trace", f"{D}/trace_nan.csv"],
         ["simulate", "--trace", f"{D}/trace_1e400.csv"],
         ["nonexistent-command"], ["analyze", "--no-such-flag"], ["analyze", "--tp"],
         ["analyze", "--tp", "1", "--tp", "x"],
         ["validate", f"{D}/meas_tp3.csv", "--mode", "ideal"], ["analyze", "--profile", f"{D}/prof_inf.toml"]]
cases += [("named in issue / misc", c) for c in extra]

def snap():
    out = {}
    for root, dirs, fs in os.walk(D):
        for f in fs:
            p = os.path.join(root, f)
            if os.path.islink(p):
                continue
            out[p] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out

stats = collections.defaultdict(collections.Counter)
bad = []
t0 = time.time()
for cls, args in cases:
    before = snap()
    t = time.time()
    code, text = invoke(args)
    dt = time.time() - t
    after = snap()
    temps = [p for p in after if ".tmp" in os.path.basename(p)]
    changed = [p for p in before if after.get(p) != before[p]]
    for p in set(after) - set(before):
        os.remove(p)
    s = stats[cls]
    s["cases"] += 1
    s[f"exit {code}"] += 1
    if code == "traceback" or "Traceback" in text:
        s["TRACEBACK"] += 1; bad.append(("traceback", args, text[-400:]))
    if code != 2:
        bad.append((f"exit {code}", args, text[-300:]))
    if code == 2 and changed:
        s["CLOBBERED"] += 1; bad.append(("clobbered", args, changed))
    if temps:
        s["TEMP LEFT"] += 1; bad.append(("temp", args, temps))
    if "ran out of memory" in text:
        s["OOM"] += 1; bad.append(("oom", args, text[-200:]))
    if dt > 20:
        bad.append((f"slow {dt:.0f}s", args, ""))
tot = collections.Counter()
for cls, s in stats.items():
    print(f"{cls:32} {dict(s)}")
    tot.update(s)
print("TOTAL", dict(tot), f"{time.time()-t0:.0f}s")
for kind, args, info in bad:
    print("--", kind, " ".join(repr(a) if (not a or " " in a) else a for a in args)[:200], "|",
          str(info).strip().splitlines()[-1:] if isinstance(info, str) else info)
import shutil  # noqa: E402

shutil.rmtree(D, ignore_errors=True)
