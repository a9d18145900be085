# SPDX-License-Identifier: Apache-2.0
"""Runs the GitHub workflow template (ci/templates/github-actions.yml) locally, job by job and
step by step, with nicemu's composite action (action.yml) taken from this checkout: the same
`run:` scripts with the same expressions, the same cache keys, and local stand-ins for the
actions it uses (actions/checkout, actions/cache/restore and /save, actions/upload-artifact,
actions/download-artifact). Each job gets a fresh HOME, workspace and runner temp directory, so
the only state that passes between jobs and runs is what the workflow caches or uploads: a
second run restores what the first saved.

    python3 ci/ci_dry_run.py --repo DIR [--mode kernel-tree|patch-base|driver-dir]
        [--before REV] [--with KEY=VALUE ...] [--work DIR] [--shards 1,2] [--kill-shard K]

--mode uses the template's commented alternative instead of `kernel-tree: .` (as a user
edits it); --before is the push's base (github.event.before); --with overrides an input of the
run job; --kill-shard K makes shard K's job die before the nicemu step, to show the merge
tolerating it.
"""

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
NICEMU_USES = re.compile(r"^[\w.-]+/nicemu@[\w.-]+$")


class Ctx:
    """The expression contexts of one job."""

    def __init__(self, env, matrix, github, runner):
        self.env = dict(env)
        self.matrix = matrix
        self.github = github
        self.runner = runner
        self.inputs = {}
        self.steps = {}
        self.failed = False


def lookup(ctx, path):
    parts = path.split(".")
    roots = {
        "env": ctx.env,
        "matrix": ctx.matrix,
        "github": ctx.github,
        "runner": ctx.runner,
        "inputs": ctx.inputs,
        "steps": ctx.steps,
    }
    cur = roots.get(parts[0])
    for p in parts[1:]:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p, "")
    return "" if cur is None else cur


TOKEN = re.compile(r"\s*(\|\||&&|==|!=|!|\(|\)|'(?:[^']|'')*'|[A-Za-z_][\w.-]*\(\)|[A-Za-z_][\w.-]*|\d+)")


def evaluate(expr, ctx):
    """GitHub's expression language, as much as the templates use: literals, context paths,
    ==, !=, !, &&, || (returning operands), parentheses, always(), success(), failure()."""
    toks = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot parse expression {expr!r} at {pos}")
        toks.append(m.group(1))
        pos = m.end()
    toks.append(None)
    i = 0

    def peek():
        return toks[i]

    def take():
        nonlocal i
        t = toks[i]
        i += 1
        return t

    def primary():
        t = take()
        if t == "(":
            v = or_expr()
            assert take() == ")"
            return v
        if t == "!":
            return not truthy(primary())
        if t.startswith("'"):
            return t[1:-1].replace("''", "'")
        if t == "always()":
            return True
        if t == "success()":
            return not ctx.failed
        if t == "failure()":
            return ctx.failed
        if t in ("true", "false"):
            return t == "true"
        if t.isdigit():
            return t
        return lookup(ctx, t)

    def cmp_expr():
        v = primary()
        while peek() in ("==", "!="):
            op = take()
            w = primary()
            eq = str(v).lower() == str(w).lower()
            v = eq if op == "==" else not eq
        return v

    def and_expr():
        v = cmp_expr()
        while peek() == "&&":
            take()
            w = cmp_expr()
            v = w if truthy(v) else v
        return v

    def or_expr():
        v = and_expr()
        while peek() == "||":
            take()
            w = and_expr()
            v = v if truthy(v) else w
        return v

    v = or_expr()
    assert peek() is None, f"trailing tokens in {expr!r}"
    return v


def truthy(v):
    return v not in (False, "", None, 0, "0", "false")


def render(value, ctx):
    if not isinstance(value, str):
        return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), ctx)), value)


def condition(step, ctx):
    cond = step.get("if")
    if cond is None:
        return not ctx.failed
    cond = str(cond).strip()
    if cond.startswith("${{"):
        cond = cond[3:-2]
    has_status = re.search(r"\b(always|success|failure|cancelled)\(\)", cond)
    v = truthy(evaluate(cond, ctx))
    return v if has_status else v and not ctx.failed


def expand_home(p, home):
    return os.path.join(home, p[2:]) if p.startswith("~/") else p


class Runner:
    def __init__(self, work, store, artifacts, repo, event, action):
        self.action = action
        self.work = work
        self.store = store
        self.artifacts = artifacts
        self.repo = repo
        self.event = event

    # ---- stand-ins for the actions the workflow uses ----
    def checkout(self, ctx, with_):
        ws = ctx.env["GITHUB_WORKSPACE"]
        subprocess.run(["git", "clone", "-q", self.repo, ws], check=True)
        return {}

    def cache_restore(self, ctx, with_):
        key = with_["key"]
        prefixes = [k for k in with_.get("restore-keys", "").splitlines() if k.strip()]
        entries = sorted(os.listdir(self.store), key=lambda e: os.path.getmtime(os.path.join(self.store, e)))
        hit = key if key in entries else None
        matched = hit
        if not matched:
            for p in prefixes:
                cands = [e for e in entries if e.startswith(p.strip())]
                if cands:
                    matched = cands[-1]
                    break
        print(f"    cache: key {key}: " + (f"restored {matched}" if matched else "miss"))
        if matched:
            home = ctx.env["HOME"]
            with tarfile.open(os.path.join(self.store, matched, "cache.tar")) as t:
                for m in t.getmembers():
                    # Paths under ~ land in this job's home, as actions/cache does.
                    if m.name == "HOME" or m.name.startswith("HOME/"):
                        m.name = os.path.relpath(os.path.join(home, m.name[5:]), "/")
                    t.extract(m, "/", filter="fully_trusted")
        return {"cache-hit": "true" if hit else "false", "cache-matched-key": matched or ""}

    def cache_save(self, ctx, with_):
        key = with_["key"]
        dest = os.path.join(self.store, key)
        if os.path.exists(dest):
            print(f"    cache: {key} exists; not saved again (as GitHub does)")
            return {}
        os.makedirs(dest + ".tmp", exist_ok=True)
        home = ctx.env["HOME"]
        with tarfile.open(os.path.join(dest + ".tmp", "cache.tar"), "w") as t:
            for p in with_["path"].splitlines():
                p = p.strip()
                full = expand_home(p, home)
                if p and os.path.exists(full):
                    t.add(full, arcname="HOME/" + p[2:] if p.startswith("~/") else full.lstrip("/"))
        os.rename(dest + ".tmp", dest)
        print(f"    cache: saved {key} ({os.path.getsize(os.path.join(dest, 'cache.tar')) >> 20} MiB)")
        return {}

    def upload(self, ctx, with_):
        name = with_["name"]
        dest = os.path.join(self.artifacts, name)
        src = os.path.join(ctx.env["GITHUB_WORKSPACE"], with_["path"])
        if not os.path.exists(src):
            print(f"    upload-artifact: {with_['path']} missing ({with_.get('if-no-files-found', 'warn')})")
            return {}
        shutil.copytree(src, dest, dirs_exist_ok=True)
        n = sum(len(f) for _, _, f in os.walk(dest))
        print(f"    upload-artifact: {name}: {n} files")
        return {}

    def download(self, ctx, with_):
        pattern = with_.get("pattern", "*")
        dest = os.path.join(ctx.env["GITHUB_WORKSPACE"], with_.get("path", "."))
        names = [n for n in sorted(os.listdir(self.artifacts)) if fnmatch.fnmatch(n, pattern)]
        for n in names:
            shutil.copytree(os.path.join(self.artifacts, n), os.path.join(dest, n), dirs_exist_ok=True)
        print(f"    download-artifact: {', '.join(names) or 'nothing'}")
        return {}

    # ---- steps ----
    def run_script(self, ctx, step, action_path=None):
        script = render(step["run"], ctx)
        env = dict(ctx.env)
        for k, v in (step.get("env") or {}).items():
            env[k] = render(v, ctx)
        out_file = os.path.join(ctx.runner["temp"], f"output-{time.monotonic_ns()}")
        env_file = os.path.join(ctx.runner["temp"], f"env-{time.monotonic_ns()}")
        open(out_file, "w").close()
        open(env_file, "w").close()
        env["GITHUB_OUTPUT"] = out_file
        env["GITHUB_ENV"] = env_file
        if action_path:
            env["GITHUB_ACTION_PATH"] = action_path
        rc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=env["GITHUB_WORKSPACE"],
            env=env,
        ).returncode
        outputs = {}
        for line in open(out_file):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                outputs[k] = v
        for line in open(env_file):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                ctx.env[k] = v
        return rc, outputs

    def step(self, ctx, step, action_path=None):
        name = render(step.get("name") or step.get("uses") or step.get("run", "").splitlines()[0], ctx)
        if not condition(step, ctx):
            print(f"  - {name}: skipped")
            return
        t0 = time.monotonic()
        print(f"  - {name}")
        rc, outputs = 0, {}
        uses = step.get("uses")
        with_ = {k: render(v, ctx) for k, v in (step.get("with") or {}).items()}
        if uses is None:
            rc, outputs = self.run_script(ctx, step, action_path)
        elif uses.startswith("actions/checkout@"):
            outputs = self.checkout(ctx, with_)
        elif uses.startswith("actions/cache/restore@"):
            outputs = self.cache_restore(ctx, with_)
        elif uses.startswith("actions/cache/save@"):
            outputs = self.cache_save(ctx, with_)
        elif uses.startswith("actions/upload-artifact@"):
            outputs = self.upload(ctx, with_)
        elif uses.startswith("actions/download-artifact@"):
            outputs = self.download(ctx, with_)
        elif NICEMU_USES.match(uses):
            rc = self.composite(ctx, with_)
        else:
            raise SystemExit(f"dry run: no stand-in for {uses}")
        if "id" in step:
            ctx.steps[step["id"]] = {"outputs": outputs}
        if rc != 0:
            ctx.failed = True
        print(f"    ({'ok' if rc == 0 else f'FAILED, exit {rc}'}, {time.monotonic() - t0:.0f} s)")

    def composite(self, ctx, with_):
        action = yaml.safe_load(open(os.path.join(self.action, "action.yml")))
        inner = Ctx({}, ctx.matrix, dict(ctx.github, action_path=self.action, action_ref="dry-run"), ctx.runner)
        inner.env = ctx.env  # GITHUB_ENV writes reach the rest of the job
        for k, spec in action["inputs"].items():
            inner.inputs[k] = with_.get(k, str(spec.get("default", "")))
        unknown = set(with_) - set(action["inputs"])
        if unknown:
            raise SystemExit(f"dry run: action.yml has no input {sorted(unknown)}")
        for s in action["runs"]["steps"]:
            self.step(inner, s, action_path=self.action)
        return 1 if inner.failed else 0

    def job(self, name, job, matrix, kill=False):
        label = name + "".join(f"-{v}" for v in matrix.values())
        base = os.path.join(self.work, "jobs", label)
        shutil.rmtree(base, ignore_errors=True)
        home, ws, temp = (os.path.join(base, d) for d in ("home", "workspace", "temp"))
        for d in (home, temp):
            os.makedirs(d)
        env = {
            "PATH": os.environ["PATH"],
            "HOME": home,
            "CARGO_HOME": os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo")),
            "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", os.path.expanduser("~/.rustup")),
            "GITHUB_WORKSPACE": ws,
            "GITHUB_STEP_SUMMARY": os.path.join(base, "summary.md"),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
        }
        if not any(s.get("uses", "").startswith("actions/checkout@") for s in job["steps"]):
            os.makedirs(ws)  # a job without checkout starts in an empty workspace
        ctx = Ctx(env, matrix, {"event": self.event, "workspace": ws}, {"os": "Linux", "temp": temp})
        print(f"job {label}")
        t0 = time.monotonic()
        for s in job["steps"]:
            if kill and NICEMU_USES.match(s.get("uses", "")):
                print("  (killed before the nicemu step, as a runner that died)")
                return label, None
            if s.get("uses", "").startswith("actions/checkout@") and not os.path.exists(ws):
                os.makedirs(os.path.dirname(ws), exist_ok=True)
            self.step(ctx, s)
        ok = not ctx.failed
        print(f"job {label}: {'ok' if ok else 'FAILED'} in {time.monotonic() - t0:.0f} s")
        return label, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True, help="the user's repository (a git checkout)")
    ap.add_argument("--template", default=os.path.join(SRC, "ci/templates/github-actions.yml"))
    ap.add_argument("--with", dest="with_", action="append", default=[], help="KEY=VALUE input of the run job")
    ap.add_argument("--mode", default="kernel-tree", choices=["kernel-tree", "patch-base", "driver-dir"],
                    help="which of the template's kinds of repository to run")
    ap.add_argument("--before", default="", help="github.event.before (the push's base)")
    ap.add_argument("--work", default=os.path.join(SRC, "target/ci-dry-run"))
    ap.add_argument("--shards", default="", help="only these shards (comma-separated)")
    ap.add_argument("--kill-shard", default="", help="this shard's job dies before its run")
    a = ap.parse_args()

    text = open(a.template).read()
    if a.mode != "kernel-tree":
        # The template's commented alternative in place of its kernel tree, as a user edits it.
        text, n1 = re.subn(r"(?m)^(\s+)kernel-tree: .*$", r"\1# (kernel-tree)", text)
        text, n2 = re.subn(rf"(?m)^(\s+)# {a.mode}:", rf"\1{a.mode}:", text)
        if (n1, n2) != (1, 1):
            raise SystemExit(f"dry run: the template has no single kernel-tree / # {a.mode} line")
    wf = yaml.safe_load(text)
    overrides = dict(kv.split("=", 1) for kv in a.with_)
    store = os.path.join(a.work, "cache-store")
    artifacts = os.path.join(a.work, "artifacts")
    os.makedirs(store, exist_ok=True)
    shutil.rmtree(artifacts, ignore_errors=True)
    os.makedirs(artifacts)
    event = {"before": a.before, "pull_request": {}}
    action = os.path.join(a.work, "action")
    # The action as GitHub fetches it: the tracked files of this checkout (edits included),
    # shared by the jobs like a runner's action cache; its target/ comes from the Rust cache.
    shutil.rmtree(action, ignore_errors=True)
    files = subprocess.run(["git", "-C", SRC, "ls-files", "-z"], capture_output=True, check=True).stdout
    for f in files.decode().split("\0"):
        if f and os.path.exists(os.path.join(SRC, f)):
            os.makedirs(os.path.join(action, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(os.path.join(SRC, f), os.path.join(action, f))
    r = Runner(a.work, store, artifacts, os.path.abspath(a.repo), event, action)
    results = {}
    t0 = time.monotonic()
    for name, job in wf["jobs"].items():
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        if any(results.get(n) is False for n in needs) and "always()" not in str(job.get("if", "")):
            print(f"job {name}: skipped (a job it needs failed)")
            continue
        for s in job["steps"]:
            if NICEMU_USES.match(s.get("uses", "")) and "merge" not in (s.get("with") or {}):
                w = s.setdefault("with", {})
                for k, v in overrides.items():
                    if v == "":
                        w.pop(k, None)
                    else:
                        w[k] = v
        combos = [{}]
        mx = (job.get("strategy") or {}).get("matrix") or {}
        for k, vals in mx.items():
            combos = [dict(c, **{k: str(v)}) for c in combos for v in vals]
        if a.shards and "shard" in mx:
            keep = a.shards.split(",")
            combos = [c for c in combos if c["shard"] in keep]
        oks = []
        for m in combos:
            _, ok = r.job(name, job, m, kill=m.get("shard") == a.kill_shard)
            oks.append(bool(ok))
        results[name] = all(oks)
    summary = ", ".join(f"{k} {'ok' if v else 'FAILED'}" for k, v in results.items())
    print(f"dry run: {summary} in {time.monotonic() - t0:.0f} s; cache store {store}")
    sys.exit(0 if all(results.values()) else 1)


if __name__ == "__main__":
    main()
