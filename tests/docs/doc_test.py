#!/usr/bin/env python3
"""CTest `docs`: runs every example of the given Markdown files and compares its output.

A fenced ```sh block is run with bash (`set -e`, stdout and stderr together, as a terminal shows
them); a ```python block with the Python of the build (build/python on PYTHONPATH). The fenced
```text block right after it (blank lines between allowed) is the output it must print, compared
line by line after stripping trailing spaces. Blocks run in order, one working directory per
document (a scratch directory under the build holding links to the checkout's top-level entries
and `build` -> the build directory), so `build/podsim run configs/default.yaml` works as written
and files one block writes are there for the next.

HTML comments on the lines right before a block change how it is treated:
  <!-- doc-test: skip REASON -->       not run; reported as SKIPPED with the reason (say why: it
                                       needs a TPU, it builds podsim itself, ...)
  <!-- doc-test: exit N -->            the block must end with exit status N (default 0)
  <!-- doc-test: stdout -->            compare standard output only (progress on stderr varies)
  <!-- doc-test: requires MODULE -->   a python block that needs MODULE (pandas): SKIPPED, and
                                       said so, where the interpreter lacks it
  <!-- doc-test: markdown -->          the output is Markdown (a table), shown as such from the line
                                       after the block up to <!-- doc-test: end -->
  <!-- doc-test: excerpt FILE -->      any block (yaml, cpp, ...): its lines must appear, in one
                                       piece, in FILE (relative to the checkout)
Other blocks (yaml, cpp, cmake without a directive) are not examples and are not checked.

Some output changes from run to run (elapsed times, rates). MASKS lists those patterns; they are
compared as the placeholder, so the document can show a real-looking figure.

PODSIM_UPDATE_DOCS=1 (or --update, `make docs-update`) rewrites each output block with what its
example now prints (adding the block where it is missing), keeping a shown line where it still
matches under MASKS. Review the diff before committing, as for `make golden`.
"""

import argparse
import difflib
import os
import pathlib
import re
import shutil
import subprocess
import sys

FENCE = re.compile(r"^(```+)\s*([\w+-]*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->\s*$")
END = re.compile(r"^<!--\s*doc-test:\s*end\s*-->\s*$")
# Figures that differ between runs of the same command: (pattern, what it stands for).
MASKS = [
    (re.compile(r"\d+(\.\d+)? s, \d+ configs/s"), "<elapsed> s, <rate> configs/s"),  # sweep summary
    (re.compile(r"\d+(\.\d+)? (ms|s) \(\d+(\.\d+)? configs/s\)"), "<elapsed> (<rate> configs/s)"),
]
# Per command. The longest is the calibrate example of docs/validation.md: one fit per case left out
# (48 fits, about 41,000 simulations), about 170 s on one core and more while CTest runs others beside it.
TIMEOUT_S = 900


class Block:
    def __init__(self, info, start, end, lines, directive):
        self.info = info  # language of the fence
        self.start = start  # index of the opening fence line
        self.end = end  # index of the closing fence line
        self.lines = lines
        self.directives = directive  # {name: argument}
        self.output = None  # the Block holding the expected output


def parse(lines):
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != fence:
            j += 1
        if j == len(lines):
            raise SystemExit(f"line {i + 1}: unclosed code block")
        directives = {}
        k = i - 1
        while k >= 0 and (d := DIRECTIVE.match(lines[k])):
            directives[d.group(1)] = d.group(2)
            k -= 1
        blocks.append(Block(info, i, j, lines[i + 1:j], directives))
        i = j + 1
    # Pair each example with the text block that follows it, or with the Markdown up to the end
    # marker for `markdown`.
    for a in blocks:
        if "markdown" in a.directives:
            m = next((k for k in range(a.end + 1, len(lines)) if END.match(lines[k])), None)
            if m is None:
                raise SystemExit(f"line {a.start + 1}: no <!-- doc-test: end --> after a markdown example")
            a.output = Block("markdown", a.end, m, [x for x in lines[a.end + 1:m]], {})
            while a.output.lines and not a.output.lines[0].strip():
                a.output.lines.pop(0)
            while a.output.lines and not a.output.lines[-1].strip():
                a.output.lines.pop()
    for a, b in zip(blocks, blocks[1:]):
        if a.output:
            continue
        if a.info in ("sh", "python") and b.info in ("text", "") and \
                all(not line.strip() for line in lines[a.end + 1:b.start]):
            a.output = b
    return blocks


def mask(line):
    for pattern, placeholder in MASKS:
        line = pattern.sub(placeholder, line)
    return line


def same(expected, actual):
    return [mask(x.rstrip()) for x in expected] == [mask(x.rstrip()) for x in actual]


def updated(expected, actual):
    """The new output block: actual, except lines that still match the shown ones under MASKS."""
    out = []
    for k, line in enumerate(actual):
        line = line.rstrip()
        if k < len(expected) and mask(expected[k].rstrip()) == mask(line):
            line = expected[k].rstrip()
        out.append(line)
    return out


def scratch_dir(root, build, work):
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for entry in root.iterdir():
        if entry.name == ".git" or entry.name.startswith("build") or entry.resolve() == build.resolve():
            continue
        (work / entry.name).symlink_to(entry)
    (work / "build").symlink_to(build.resolve())
    return work


def build_python(build):
    cache = build / "CMakeCache.txt"
    if cache.exists():
        # FindPython's choice (python/CMakeLists.txt prefers Debian's /usr/bin/python3).
        m = re.search(r"^_?Python_EXECUTABLE:\w+=(.+)$", cache.read_text(), re.M)
        if m:
            return m.group(1)
    return sys.executable


def run(block, cwd, build, python, stdout_only):
    env = dict(os.environ)
    env.pop("PODSIM_HOME", None)
    env.update(LC_ALL="C.UTF-8", COLUMNS="100", PYTHONPATH=str(build.resolve() / "python"))
    code = "\n".join(block.lines) + "\n"
    if block.info == "sh":
        command = ["bash", "-e", "-c", code]
    else:
        command = [python, "-c", code]
    try:
        p = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL if stdout_only else subprocess.STDOUT, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, [f"(timed out after {TIMEOUT_S} s)"]
    text = p.stdout.decode("utf-8", "replace")
    return p.returncode, text.splitlines()


def has_module(python, module):
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def check_document(path, root, build, python, update, counts):
    lines = path.read_text().splitlines()
    blocks = parse(lines)
    name = path.relative_to(root)
    work = scratch_dir(root, build, build / "doc-test" / str(name).replace("/", "_"))
    replacements = []  # (start, end, new lines): end exclusive, in lines' indices
    for block in blocks:
        where = f"{name}:{block.start + 1}"
        directives = block.directives
        unknown = set(directives) - {"skip", "exit", "stdout", "requires", "excerpt", "markdown"}
        if unknown:
            report(counts, where, "FAILED", block.info, f"unknown directive(s) {sorted(unknown)}")
            continue
        if "excerpt" in directives:
            argument = directives["excerpt"]
            source = (root / argument).read_text().splitlines()
            want = [x.rstrip() for x in block.lines]
            have = [x.rstrip() for x in source]
            found = any(have[k:k + len(want)] == want for k in range(len(have) - len(want) + 1))
            report(counts, where, "ok" if found else "FAILED", f"excerpt of {argument}",
                   None if found else f"these lines are not in {argument} as shown:\n" + "\n".join(want))
            continue
        if block.info not in ("sh", "python"):
            continue
        title = block.lines[0] if block.lines else "(empty)"
        if "skip" in directives:
            report(counts, where, "SKIPPED", title, f"not run: {directives['skip']}")
            continue
        if block.info == "python" and not list((build / "python" / "podsim").glob("_podsim*")):
            report(counts, where, "SKIPPED", title, "not run: this build has no Python module (PODSIM_PYTHON=OFF)")
            continue
        if "requires" in directives and not has_module(python, directives["requires"]):
            report(counts, where, "SKIPPED", title, f"not run: {python} has no {directives['requires']}")
            continue
        expected_exit = int(directives.get("exit") or 0)
        code, actual = run(block, work, build, python, "stdout" in directives)
        problems = []
        if code != expected_exit:
            problems.append(f"exit status {code}, expected {expected_exit}")
        expected = block.output.lines if block.output else None
        if expected is None:
            problems.append("no ```text block with its output follows")
        elif not same(expected, actual):
            diff = difflib.unified_diff([x.rstrip() for x in expected], [x.rstrip() for x in actual],
                                        "shown", "printed", lineterm="", n=2)
            problems.append("output differs:\n" + "\n".join(diff))
        if update and code == expected_exit and problems:
            new = updated(expected or [], actual)
            if block.output and block.output.info == "markdown":
                replacements.append((block.output.start + 1, block.output.end, ["", *new, ""]))
            elif block.output:
                replacements.append((block.output.start + 1, block.output.end, new))
            else:
                replacements.append((block.end + 1, block.end + 1, ["", "```text", *new, "```"]))
            report(counts, where, "UPDATED", title, None)
            continue
        report(counts, where, "FAILED" if problems else "ok", title, "\n".join(problems) or None)
    if replacements:
        for start, end, new in sorted(replacements, reverse=True):
            lines[start:end] = new
        path.write_text("\n".join(lines) + "\n")


def report(counts, where, status, title, detail):
    counts[status] = counts.get(status, 0) + 1
    print(f"{status:8} {where}  {title[:90]}")
    if detail and status != "ok":
        for line in detail.splitlines():
            print(f"           {line}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, type=pathlib.Path)
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[2])
    parser.add_argument("--update", action="store_true", default=os.environ.get("PODSIM_UPDATE_DOCS") == "1")
    parser.add_argument("files", nargs="*", type=pathlib.Path, help="default: README.md and docs/*.md")
    args = parser.parse_args()
    root = args.root.resolve()
    python = build_python(args.build)
    counts = {}
    files = args.files or [pathlib.Path("README.md"), *sorted((root / "docs").glob("*.md"))]
    for f in files:
        path = (f if f.is_absolute() else root / f).resolve()
        check_document(path, root, args.build, python, args.update, counts)
    passed = counts.get("ok", 0) + counts.get("UPDATED", 0)
    print(f"docs: {passed} passed, {counts.get('FAILED', 0)} failed, {counts.get('SKIPPED', 0)} skipped"
          + (f" ({counts['UPDATED']} updated: review the diff)" if counts.get("UPDATED") else ""))
    return 1 if counts.get("FAILED") else 0


if __name__ == "__main__":
    sys.exit(main())
