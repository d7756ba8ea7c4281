"""Fails on a circle between the modules of one crate and prints each as its chain of modules.

A crate's module tree is read from `mod` declarations starting at `src/lib.rs`; test
modules (`#[cfg(test)]`) and every other `#[cfg(test)]` item are left out, since tests may
reach anywhere. A module depends on another when it names it in a path: `use crate::...`,
`use super::...`, `self::`, a child module or an imported module, in a `use` or in code.
A path is followed through the imports of the module it ends in, so `use crate::Error`
depends on the module that defines `Error`, not on the one that re-exports it.

A module's uses of its own ancestors and descendants are not dependencies here: a parent
declares, re-exports and drives its children, and children use the parent's shared items
(the crate root's `Context`, for one) by design. A circle is among modules none of which
contains another.

Usage: check_module_circles.py [--allow FILE] CRATE_DIR...
The allow-list holds known circles, one per line: `CRATE: module module ...` (a crate's
directory name, then the modules of the circle). A circle whose modules are all in one
allowed line passes; any other fails the check, so a new or a grown circle is caught.
"""

import os
import re
import sys

TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*)
  | (?P<raw_str>b?r(?P<hashes>\#*)")
  | (?P<str>b?"(?:[^"\\]|\\.)*")
  | (?P<char>b?'(?:[^'\\\n]|\\[^\n][^'\n]*)')
  | (?P<lifetime>'[A-Za-z_][A-Za-z0-9_]*)
  | (?P<dollar_ident>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ident>r\#[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>[0-9][A-Za-z0-9_.]*)
  | (?P<path_sep>::)
  | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


class Tok:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line

    def __repr__(self):
        return f"{self.kind}:{self.text}"


def tokenize(src):
    """Rust tokens without comments and whitespace; string literals keep their text."""
    toks, pos, line = [], 0, 1
    while pos < len(src):
        m = TOKEN.match(src, pos)
        kind = m.lastgroup if m.lastgroup != "hashes" else "raw_str"
        if m.group("block_comment"):
            depth, end = 1, m.end()
            while depth and end < len(src):
                if src.startswith("/*", end):
                    depth, end = depth + 1, end + 2
                elif src.startswith("*/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
            text = src[pos:end]
        elif m.group("raw_str"):
            close = '"' + m.group("hashes")
            end = src.find(close, m.end())
            end = len(src) if end < 0 else end + len(close)
            text, kind = src[pos:end], "str"
        else:
            end, text = m.end(), m.group(0)
        if kind not in ("ws", "line_comment", "block_comment"):
            toks.append(Tok(kind, text, line))
        line += src.count("\n", pos, end)
        pos = end
    return toks


def matching(toks, i):
    """Index of the bracket closing the one at toks[i]."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = []
    for j in range(i, len(toks)):
        t = toks[j].text
        if toks[j].kind != "punct":
            continue
        if t in pairs:
            stack.append(pairs[t])
        elif stack and t == stack[-1]:
            stack.pop()
            if not stack:
                return j
    return len(toks) - 1


def item_end(toks, i):
    """Index of the last token of the item starting at toks[i] (`;` or its closing `}`)."""
    j = i
    while j < len(toks):
        t = toks[j]
        if t.kind == "punct" and t.text in "([":
            j = matching(toks, j) + 1
            continue
        if t.kind == "punct" and t.text == "{":
            end = matching(toks, j)
            # `struct S { .. };` is not Rust, but `let`-free items end at their block.
            return end
        if t.kind == "punct" and t.text == ";":
            return j
        j += 1
    return len(toks) - 1


def is_cfg_test(attr):
    """Whether an attribute's tokens (between `[` and `]`) switch its item to tests only."""
    texts = [t.text for t in attr]
    if not texts or texts[0] != "cfg":
        return False
    # cfg(test), cfg(all(test, ..)); cfg(not(test)) is compiled outside tests.
    return "test" in texts and "not" not in texts and "any" not in texts


class Module:
    def __init__(self, crate, path, file, parent):
        self.crate, self.path, self.file, self.parent = crate, path, file, parent
        self.children = {}
        self.uses = []  # (segments, alias, line) of each `use` leaf
        self.paths = []  # (segments, line) of each path in code
        self.imports = {}  # name -> (segments) it was imported from

    @property
    def name(self):
        return "::".join(self.path) or "crate"

    def ancestors(self):
        m = self.parent
        while m:
            yield m
            m = m.parent


def parse_use_tree(toks, i, prefix, out):
    """Parses a use tree from toks[i]; appends (segments, alias, line); returns the next index."""
    segs = list(prefix)
    while i < len(toks):
        t = toks[i]
        if t.kind == "path_sep":
            i += 1
        elif t.kind == "ident" and t.text != "as":
            segs.append(t.text)
            i += 1
            if i < len(toks) and toks[i].kind == "ident" and toks[i].text == "as":
                out.append((segs, toks[i + 1].text, t.line))
                return i + 2
            if i >= len(toks) or toks[i].kind != "path_sep":
                out.append((segs, segs[-1], t.line))
                return i
        elif t.text == "*":
            out.append((segs, "*", t.line))
            return i + 1
        elif t.text == "{":
            i += 1
            while i < len(toks) and toks[i].text != "}":
                if toks[i].text == ",":
                    i += 1
                    continue
                i = parse_use_tree(toks, i, segs, out)
            return i + 1
        else:
            return i
    return i


def read_module(mod, toks, lo, hi, modules):
    """Reads the items of `mod` in toks[lo:hi]: child modules, uses and paths."""
    base_dir = mod.base_dir
    i, attrs = lo, []
    while i < hi:
        t = toks[i]
        if t.text == "#" and i + 1 < hi and toks[i + 1].text in ("[", "!"):
            start = i + 1 if toks[i + 1].text == "[" else i + 2
            end = matching(toks, start)
            attr = toks[start + 1 : end]
            if toks[i + 1].text == "!":
                if is_cfg_test(attr):
                    return  # the whole module is test-only
            else:
                attrs.append(attr)
            i = end + 1
            continue
        if any(is_cfg_test(a) for a in attrs):
            i, attrs = item_end(toks, i) + 1, []
            continue
        if t.kind == "ident" and t.text == "mod" and i + 1 < hi and toks[i + 1].kind == "ident":
            name = toks[i + 1].text
            after = toks[i + 2] if i + 2 < hi else None
            child = Module(mod.crate, mod.path + [name], mod.file, mod)
            mod.children[name] = child
            modules.append(child)
            if after is not None and after.text == "{":
                end = matching(toks, i + 2)
                child.base_dir = os.path.join(base_dir, name)
                read_module(child, toks, i + 3, end, modules)
                i, attrs = end + 1, []
                continue
            path_attr = next(
                (a[2].text[1:-1] for a in attrs if len(a) >= 3 and a[0].text == "path" and a[2].kind == "str"),
                None,
            )
            if path_attr:
                file = os.path.join(os.path.dirname(mod.file), path_attr)
            else:
                file = os.path.join(base_dir, name + ".rs")
                if not os.path.exists(file):
                    file = os.path.join(base_dir, name, "mod.rs")
            child.file = file
            child.base_dir = (
                os.path.dirname(file)
                if os.path.basename(file) == "mod.rs"
                else file[: -len(".rs")]
            )
            load_file(child, modules)
            i, attrs = i + 3, []
            continue
        if t.kind == "ident" and t.text == "use":
            out = []
            j = i + 1
            if toks[j].kind == "path_sep":
                j += 1
            parse_use_tree(toks, j, [], out)
            for segs, alias, line in out:
                mod.uses.append((segs, alias, line))
                if alias not in ("*", "_", "self"):
                    segs_ = segs[:-1] if segs[-1] == "self" else segs
                    mod.imports[alias if alias != "self" else segs_[-1]] = segs_
            i, attrs = item_end(toks, i) + 1, []
            continue
        if t.kind == "ident" and i + 1 < hi and toks[i + 1].kind == "path_sep" and (
            i == lo or toks[i - 1].kind != "path_sep"
        ):
            segs, j = [t.text], i + 1
            while j + 1 < hi and toks[j].kind == "path_sep" and toks[j + 1].kind == "ident":
                segs.append(toks[j + 1].text)
                j += 2
            mod.paths.append((segs, t.line))
            i = j
            continue
        if t.text not in ("pub", "(", ")", "crate") or t.kind != "punct":
            # Any other token ends the attributes that belonged to the item before it.
            if t.kind == "punct" and t.text in (";", "}", "{"):
                attrs = []
        i += 1


def load_file(mod, modules):
    try:
        with open(mod.file, encoding="utf-8") as f:
            src = f.read()
    except OSError as e:
        sys.exit(f"{mod.crate}: module {mod.name} declared but its file cannot be read: {e}")
    toks = tokenize(src)
    read_module(mod, toks, 0, len(toks), modules)


def read_crate(crate_dir):
    root_file = os.path.join(crate_dir, "src", "lib.rs")
    if not os.path.exists(root_file):
        root_file = os.path.join(crate_dir, "src", "main.rs")
    crate = os.path.basename(os.path.normpath(crate_dir))
    root = Module(crate, [], root_file, None)
    root.base_dir = os.path.dirname(root_file)
    modules = [root]
    load_file(root, modules)
    return root, modules


def resolve(root, mod, segs, seen=None):
    """The module a path names from inside `mod` (the deepest module it reaches, following
    imports), or None when it leaves the crate."""
    seen = seen if seen is not None else set()
    first, rest = segs[0], segs[1:]
    if first == "crate":
        cur = root
    elif first == "self":
        cur = mod
    elif first == "super":
        cur = mod.parent or mod
        while rest and rest[0] == "super":
            cur, rest = cur.parent or cur, rest[1:]
    elif first in mod.children:
        cur, rest = mod.children[first], rest
    elif first in mod.imports and (mod.name, first) not in seen:
        seen.add((mod.name, first))
        cur = resolve(root, mod, mod.imports[first], seen)
        if cur is None:
            return None
    else:
        return None
    for i, seg in enumerate(rest):
        if seg in cur.children:
            cur = cur.children[seg]
        elif seg in cur.imports and (cur.name, seg) not in seen:
            seen.add((cur.name, seg))
            target = resolve(root, cur, cur.imports[seg], seen)
            return target if target is not None else cur
        else:
            return cur
    return cur


def edges_of(root, modules):
    """{module: {dependency: first line naming it}} between modules neither containing the other."""
    edges = {m: {} for m in modules}
    for m in modules:
        anc = set(map(id, m.ancestors()))
        for segs, line in [(s, l) for s, _, l in m.uses] + m.paths:
            target = resolve(root, m, segs)
            if target is None or target is m or id(target) in anc:
                continue
            if id(m) in set(map(id, target.ancestors())):
                continue
            edges[m].setdefault(target, f"{m.file}:{line}")
    return edges


def strongly_connected(modules, edges):
    """Tarjan's components with more than one module, each sorted by name."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w is v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp, key=lambda m: m.name))

    sys.setrecursionlimit(10000)
    for v in modules:
        if v not in index:
            visit(v)
    return out


def shortest_cycle(start, comp, edges):
    """The shortest chain start -> ... -> start inside one component."""
    members = set(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in edges[v]:
                if w not in members:
                    continue
                if w is start:
                    chain = [v]
                    while prev[chain[-1]] is not None:
                        chain.append(prev[chain[-1]])
                    return list(reversed(chain))
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def chains(comp, edges):
    """Chains covering every module of a component, each printed once."""
    seen, out = set(), []
    for m in comp:
        cyc = shortest_cycle(m, comp, edges)
        # one rotation per cycle: start at its smallest name
        k = min(range(len(cyc)), key=lambda i: cyc[i].name)
        cyc = cyc[k:] + cyc[:k]
        key = tuple(c.name for c in cyc)
        if key not in seen:
            seen.add(key)
            out.append(cyc)
    return out


def read_allow(path):
    allowed = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            crate, sep, names = line.partition(":")
            if not sep or not names.split():
                sys.exit(f"{path}:{n}: expected `CRATE: module module ...`, got {line!r}")
            allowed.append((crate.strip(), set(names.split())))
    return allowed


def main(argv):
    allow_file = None
    if len(argv) >= 2 and argv[0] == "--allow":
        allow_file, argv = argv[1], argv[2:]
    if not argv:
        sys.exit(__doc__)
    allowed = read_allow(allow_file) if allow_file else []
    failed = 0
    for crate_dir in argv:
        root, modules = read_crate(crate_dir)
        edges = edges_of(root, modules)
        for comp in strongly_connected(modules, edges):
            names = {m.name for m in comp}
            ok = any(c == root.crate and names <= a for c, a in allowed)
            label = "known circle (allowed)" if ok else "module circle"
            print(f"{root.crate}: {label}: {' '.join(sorted(names))}")
            for cyc in chains(comp, edges):
                steps = [f"{a.name} ({edges[a][b]})" for a, b in zip(cyc, cyc[1:] + cyc[:1])]
                print("    " + " -> ".join(steps) + f" -> {cyc[0].name}")
            failed += not ok
    if failed:
        print(f"{failed} module circle(s); move what the modules share into a leaf module")
        return 1
    print(f"no module circles in {len(argv)} crate(s)" + (" beyond the allowed ones" if allowed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
