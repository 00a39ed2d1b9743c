"""`selector functions` and `selector diff` on a small C++ binary, as ratios to `objdump -d`.

Builds a C++ program with g++ -O2 (class templates, the standard library's containers and
algorithms instantiated for a dozen classes, virtual methods, constructors and
destructors: about 300 KB, most of it long template names), and a second build with one
method edited.  Then times, alternating in one run (`--rounds`, medians):

* `selector functions A` against `objdump -d A`;
* `selector diff A B` against `objdump -d A B` (what one would diff by hand);
* `python -c pass` and `python -c "import perf_selector.selector.cli"`: the interpreter's and the
  command line's share of every command, which no analysis work can lower.

Every command is a new process of this interpreter (`python -m perf_selector`), as a user
starts it, with its bytecode cached as an installed package has it (one warm-up run
writes the caches that PYTHONDONTWRITEBYTECODE would keep from being written).
Target: ratios at most 1.  Run: python benchmarks/cxx_naming_speed.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, median  # noqa: E402

CLASSES = 18

PROGRAM_HEAD = """\
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace inventory {
template <typename Item> class Ledger {
public:
    void add(const std::string &name, Item item) { items_[name].push_back(std::move(item)); }
    std::vector<Item> sorted(const std::string &name) const {
        auto found = items_.find(name);
        std::vector<Item> copy = found == items_.end() ? std::vector<Item>() : found->second;
        std::sort(copy.begin(), copy.end(), [](const Item &a, const Item &b) { return a.weight() < b.weight(); });
        return copy;
    }
    double total() const {
        double sum = 0;
        for (const auto &entry : items_) for (const auto &item : entry.second) sum += item.weight();
        return sum;
    }
private:
    std::map<std::string, std::vector<Item>> items_;
};
struct Part {
    virtual ~Part() = default;
    virtual double weight() const = 0;
    virtual std::string label() const = 0;
};
"""

CLASS = """\
struct Part{i} : Part {{
    int count;
    std::string name;
    Part{i}(int c, std::string n) : count(c), name(std::move(n)) {{}}
    Part{i}(const Part{i} &) = default;
    Part{i} &operator=(const Part{i} &) = default;
    ~Part{i}() override {{}}
    double weight() const override {{ return count * {factor} + name.size(); }}
    std::string label() const override {{ return name + "#{i}"; }}
}};
double use{i}(int n) {{
    Ledger<Part{i}> ledger;
    for (int k = 0; k < n; k++) ledger.add(k % 2 ? "odd" : "even", Part{i}(k * {i}, "part" + std::to_string(k)));
    auto sorted = ledger.sorted("odd");
    return ledger.total() + (sorted.empty() ? 0 : sorted.front().weight());
}}
"""

PROGRAM_TAIL = """\
}}  // namespace inventory
int main(int argc, char **) {{
    double sum = 0;
{calls}
    std::printf("%f\\n", sum);
    return 0;
}}
"""


def program(edited: bool) -> str:
    """The benchmark program; `edited` changes one method of one class (Part3::weight)."""
    classes = "".join(CLASS.format(i=i, factor=1.5 if i == 3 and edited else 0.5 + i) for i in range(CLASSES))
    calls = "\n".join(f"    sum += inventory::use{i}(argc + {i});" for i in range(CLASSES))
    return PROGRAM_HEAD + classes + PROGRAM_TAIL.format(calls=calls)


def build(folder: Path, name: str, edited: bool) -> Path:
    source = folder / f"{name}.cpp"
    source.write_text(program(edited))
    binary = folder / name
    subprocess.run(["g++", "-O2", "-o", str(binary), str(source)], check=True)
    return binary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    arguments = parser.parse_args()
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}

    def run(*command: str) -> None:
        subprocess.run(command, stdout=subprocess.DEVNULL, env=environment, check=True)

    def selector(*arguments: str) -> None:
        run(sys.executable, "-m", "perf_selector", *arguments)

    with tempfile.TemporaryDirectory(prefix="cxx-naming-") as folder:
        old, new = build(Path(folder), "old", edited=False), build(Path(folder), "new", edited=True)
        size = old.stat().st_size
        listing = subprocess.run([sys.executable, "-m", "perf_selector", "functions", str(old), "--format", "json"],
                                 capture_output=True, text=True, env=environment, check=True).stdout
        selector("diff", str(old), str(new))  # warm-up: bytecode caches written
        candidates = {
            "selector functions A": lambda: selector("functions", str(old)),
            "objdump -d A": lambda: run("objdump", "-d", str(old)),
            "selector diff A B": lambda: selector("diff", str(old), str(new)),
            "objdump -d A B": lambda: run("objdump", "-d", str(old), str(new)),
            "python -c pass": lambda: run(sys.executable, "-c", "pass"),
            "import perf_selector.selector.cli": lambda: run(sys.executable, "-c", "import perf_selector.selector.cli"),
        }
        times = interleaved(candidates, arguments.rounds)
        shown = subprocess.run([sys.executable, "-m", "perf_selector", "diff", str(old), str(new)],
                               capture_output=True, text=True, env=environment, check=True).stdout

    import json

    rows = json.loads(listing)
    print(f"binary        g++ -O2, {size / 1000:.0f} KB, {len(rows)} functions, "
          f"longest name {max(len(row['demangled']) for row in rows)} characters")
    print(f"load average  {os.getloadavg()[0]:.2f} (2 cores; other work slows every candidate alike: they alternate)")
    for name, values in times.items():
        print(f"{name:22s} {median(values):.3f} s  (median of {arguments.rounds}; {', '.join(f'{v:.3f}' for v in values)})")
    for ours, theirs in (("selector functions A", "objdump -d A"), ("selector diff A B", "objdump -d A B")):
        print(f"{ours} / {theirs} = {median(times[ours]) / median(times[theirs]):.2f}  (target <= 1)")
    print(f"of which the interpreter and the command line's import: {median(times['import perf_selector.selector.cli']):.3f} s")
    print("the diff it prints:\n" + shown)


if __name__ == "__main__":
    main()
