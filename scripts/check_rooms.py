#!/usr/bin/env python3
"""Checks that the runtime's includes point only down its rooms, as runtime/rooms.txt orders them.

A file of runtime/src/<room>/ may include the private headers of its own room and of the rooms
its line of the table names; a public header (runtime/include/pipeprof/runtime/) belongs to the
room that lists it and includes public headers only. The table itself is checked too: every
folder of runtime/src is a room, every public header is listed once, and a room names only rooms
listed before it (so the rooms form floors, never a circle).

  scripts/check_rooms.py              the repository's runtime
  scripts/check_rooms.py --root DIR   the runtime under DIR
  scripts/check_rooms.py --self-test  proves it can fail: plants an upward include and a public
                                      header including a private one in copies of the runtime

Prints every problem as file:line: text and exits 1 when there is one. scripts/test.sh runs it
before building; ctest runs it as rooms_check and rooms_check_self_test.
"""
import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

TABLE = Path("runtime/rooms.txt")
SOURCES = Path("runtime/src")
PUBLIC = Path("runtime/include/pipeprof/runtime")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_table(root, problems):
    """rooms in order -> (rooms it may include, its public headers)."""
    rooms = {}
    for number, line in enumerate((root / TABLE).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("|")
        where = f"{TABLE}:{number}"
        if len(fields) != 3:
            problems.append(f'{where}: expected "room | may include | public headers"')
            continue
        room, below, headers = fields[0].strip(), set(fields[1].split()), fields[2].split()
        if room in rooms:
            problems.append(f"{where}: room {room} is listed twice")
        for other in sorted(below - rooms.keys()):
            problems.append(f"{where}: room {room} may include {other}, which is not a room listed before it")
        rooms[room] = (below, headers)
    return rooms


def check(root):
    problems = []
    rooms = read_table(root, problems)
    public_room = {}
    for room, (_, headers) in rooms.items():
        for header in headers:
            if header in public_room:
                problems.append(f"{TABLE}: public header {header} is listed twice")
            public_room[header] = room
    for entry in sorted((root / SOURCES).iterdir()):
        if entry.name not in rooms:
            problems.append(f"{SOURCES / entry.name}: is not a room of {TABLE} (every file lives in a room folder)")
    for room in rooms:
        if not (root / SOURCES / room).is_dir():
            problems.append(f"{TABLE}: room {room} has no folder {SOURCES / room}")
    publics = sorted((root / PUBLIC).glob("*.h"))
    for header in set(public_room) - {path.name for path in publics}:
        problems.append(f"{TABLE}: public header {header} does not exist in {PUBLIC}")

    files = [(path, path.relative_to(root / SOURCES).parts[0]) for path in sorted((root / SOURCES).rglob("*"))
             if path.suffix in (".h", ".cpp") and len(path.relative_to(root / SOURCES).parts) > 1]
    files += [(path, public_room.get(path.name)) for path in publics]
    for path, room in files:
        name = path.relative_to(root)
        if room is None:
            problems.append(f"{name}: is in no room: list it in {TABLE}")
            continue
        is_public = path.parent == root / PUBLIC
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            quoted, target = match.group(1) == '"', match.group(2)
            where = f"{name}:{number}"
            if target.startswith("pipeprof/runtime/"):
                to = public_room.get(target.removeprefix("pipeprof/runtime/"))
                if to is None:
                    problems.append(f"{where}: includes <{target}>, which no room of {TABLE} lists")
                    continue
            elif not quoted:
                continue  # core, profiler, LibTorch, the standard library: not rooms of the runtime
            elif is_public:
                problems.append(f'{where}: public header includes "{target}", a private header: it would not '
                                "compile where it is installed")
                continue
            else:
                to = target.split("/")[0] if "/" in target else None
                if to not in rooms:
                    problems.append(f'{where}: includes "{target}": name it with its room, e.g. "stage/skip.h"')
                    continue
            below = rooms[room][0]
            if to != room and to not in below:
                problems.append(f"{where}: room {room} includes {target} of room {to}, which it may not "
                                f"({room} may include: {' '.join(sorted(below)) or 'no other room'}; {TABLE})")
    return problems, len(files)


def self_test(root):
    """The tree passes; an upward include and a public header's private include are refused by line."""
    problems, _ = check(root)
    if problems:
        sys.exit("check_rooms.py --self-test: the tree itself fails the check:\n" + "\n".join(problems))
    lowest, highest = list(read_table(root, []))[0], list(read_table(root, []))[-1]
    highest_header = sorted((root / SOURCES / highest).glob("*.h"))[0].name
    planted = f'#include "{highest}/{highest_header}"'
    targets = [sorted((root / SOURCES / lowest).glob("*.cpp"))[0], sorted((root / PUBLIC).glob("*.h"))[0]]
    for target in targets:
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch)
            shutil.copytree(root / "runtime", copy / "runtime")
            planted_in = copy / target.relative_to(root)
            with planted_in.open("a") as file:
                file.write(planted + "\n")
            line = len(planted_in.read_text().splitlines())
            expected = f"{target.relative_to(root)}:{line}: "
            found = [problem for problem in check(copy)[0] if problem.startswith(expected)]
            if not found:
                sys.exit(f"check_rooms.py --self-test: {planted} in {expected} was not refused")
            print("refused as expected:", found[0])
    print("check_rooms.py --self-test: passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--self-test", action="store_true")
    arguments = parser.parse_args()
    if arguments.self_test:
        return self_test(arguments.root)
    problems, files = check(arguments.root)
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(f"check_rooms.py: {len(problems)} include(s) or entries break the rooms of {TABLE}")
    print(f"check_rooms.py: {files} runtime files, every include points down ({TABLE})")


if __name__ == "__main__":
    main()
