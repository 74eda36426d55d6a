"""Print the import cycles among loom_otel's modules (grimp's graph); exit 1 when there is one.

Imports under ``TYPE_CHECKING`` count: they never run, but two modules that name each other's types
are still one module split in two. Run with the three source roots on ``sys.path`` (.ci/run: the
editable install)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import grimp


def cycles(graph: grimp.ImportGraph) -> Iterator[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, edges = work[-1]
            for target in edges:
                if target not in graph.modules or graph.is_module_squashed(target):
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.find_modules_directly_imported_by(target)))))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        yield sorted(component)


def main() -> int:
    graph = grimp.build_graph("loom_otel", exclude_type_checking_imports=False, cache_dir=None)
    found = list(cycles(graph))
    for component in found:
        print("import cycle:", " <-> ".join(component))
    print(f"{len(graph.modules)} modules, {len(found)} import cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
