#!/usr/bin/env python3
"""Checks that sibling modules of a folder name each other in one direction only.

For each folder given as DIR:PREFIX (PREFIX is how its modules are named from inside:
`crate`, `crate::vector`, `super`), every direct child module (a `.rs` file or a
sub-folder) is a node, and an edge A -> B means code of A (tests excluded) names
`PREFIX::B`. Prints each folder's edges and exits 1 if any two siblings reach each
other. Run from the repository root by scripts/test.sh.
"""
import itertools
import os
import re
import sys


def modules(folder):
    found = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".rs") and name not in ("lib.rs", "mod.rs", "main.rs"):
            found[name[:-3]] = [path]
        elif os.path.isdir(path):
            found[name] = [
                os.path.join(root, f)
                for root, _, files in os.walk(path)
                for f in files
                if f.endswith(".rs")
            ]
    return found


def source(path):
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]\nmod tests")
    if cut >= 0:
        text = text[:cut]
    return re.sub(r"//.*", "", text)


def edges(folder, prefix):
    mods = modules(folder)
    named = re.compile(re.escape(prefix) + r"::([a-z_][a-z_0-9]*)")
    grouped = re.compile(re.escape(prefix) + r"::\{([^}]*)\}")
    graph = {}
    for mod, files in mods.items():
        deps = set()
        for f in files:
            text = source(f)
            deps.update(named.findall(text))
            for group in grouped.findall(text):
                deps.update(re.findall(r"(?:^|[,{\s])([a-z_][a-z_0-9]*)(?=\s*(?:::|,|$))", group))
        graph[mod] = sorted(d for d in deps if d in mods and d != mod)
    return graph


def reaches(graph, start, goal):
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def main(args):
    failed = False
    for arg in args:
        folder, prefix = arg.split(":", 1)
        graph = edges(folder, prefix)
        pairs = [
            (a, b)
            for a, b in itertools.combinations(sorted(graph), 2)
            if reaches(graph, a, b) and reaches(graph, b, a)
        ]
        print(f"module_cycles: {folder}: " + ("no cycles" if not pairs else f"CYCLES {pairs}"))
        if pairs:
            for mod, deps in graph.items():
                print(f"  {mod} -> {', '.join(deps) or '-'}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
