#!/usr/bin/env python3
"""Lists the C++ function definitions longer than a limit, per component.

  scripts/long_functions.py [--limit N] [DIR...]    (default: 100 lines; every component)

A function's length is its lines from the first line of its signature to its closing brace,
both included (what `sed -n A,Bp` of the definition prints). The method is a brace matcher,
not a compiler: comments, string and character literals (raw strings included) are blanked,
then every `{` at namespace or class scope whose text since the previous `;`, `{` or `}` ends
in a parameter list (optionally followed by qualifiers, a trailing return type or a
constructor's initializer list) opens a function that ends at its matching `}`. Lambdas and
local classes count toward the function that holds them. Prints one line per long function
(lines, file:line, name) and a count per component.
"""
import argparse
import os
import re
import sys

COMPONENTS = ["core", "simulator", "profiler", "tuner", "cli", "launch", "gui", "runtime"]


def blank(text):
    """The text with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i + 2)
            delim = text[i + 2:k]
            j = text.find(")" + delim + '"', k)
            j = n if j < 0 else j + len(delim) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):  # 1'000 is a digit separator
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blank_directives(text):
    """Preprocessor lines (with their continuations) and access specifiers blanked."""
    text = re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return re.sub(r"\b(public|private|protected)\s*:(?!:)", lambda m: " " * len(m.group(0)), text)


def strip_parens(head):
    """head with every parenthesised group (and its contents) removed."""
    out, depth = [], 0
    for c in head:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


SIGNATURE_END = re.compile(r"\)\s*(const|noexcept|override|final|mutable|&|&&|\s)*(->[^{;]*)?$")
INIT_LIST = re.compile(r"\)\s*(noexcept\s*)?:(?!:)")


def kind_of(head):
    """'function', 'scope' (namespace, class, extern "C") or 'other' for the `{` after head."""
    h = re.sub(r"\boperator\s*(\(\)|[^\s(]+)", "operator", head.strip())
    if re.search(r"\bnamespace\b", h) or re.match(r'^extern\s+""$', h):
        return "scope"
    if re.match(r"^(template\s*<.*>\s*)?(class|struct|union)\b", h, re.S) and "(" not in h.split(":")[0]:
        return "scope"
    if re.match(r"^(template\s*<.*>\s*)?enum\b", h, re.S):
        return "other"
    if "=" in strip_parens(h) or "(" not in h:
        return "other"
    if SIGNATURE_END.search(h):
        return "function"
    if INIT_LIST.search(h):  # Ctor(...) : a_(x), b_{y} -- the body is the `{` after the list
        return "init"
    return "other"


def functions(text):
    """Yields (start, end) offsets in the blanked text of each function definition: the first
    character of its signature and its closing brace."""
    stack = []  # the kind of each open brace
    head_start = 0  # where the declaration being read begins
    ctor_start = None  # set while a constructor's initializer list is being read
    signature_start = []  # per open function brace
    for i, c in enumerate(text):
        if c == "{":
            if stack and stack[-1] in ("function", "other"):
                stack.append("other")  # a block, lambda or initializer inside something
                continue
            if ctor_start is None and kind_of(text[head_start:i]) == "init":
                ctor_start = head_start
            if ctor_start is not None:
                # a brace initializer (`b_{y}` after a name, or `Base({x})` inside parentheses) or
                # the body (after `)` or `}`)
                head = text[head_start:i]
                if head.count("(") > head.count(")") or re.search(r"[A-Za-z0-9_>]$", head.rstrip()):
                    stack.append("init-brace")
                    continue
                stack.append("function")
                signature_start.append(ctor_start)
                ctor_start = None
            else:
                kind = kind_of(text[head_start:i])
                stack.append(kind)
                if kind == "function":
                    signature_start.append(head_start)
            head_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "function":
                start = signature_start.pop()
                while start < i and text[start].isspace():
                    start += 1
                yield start, i
            if kind != "init-brace":  # the declaration goes on after a member's brace initializer
                head_start = i + 1
        elif c == ";" and not (stack and stack[-1] in ("function", "other")):
            head_start = i + 1
            ctor_start = None


def long_functions(path, limit):
    """(lines, first line, name) of each function in path longer than limit lines."""
    raw = open(path, encoding="utf-8", errors="replace").read()
    text = blank_directives(blank(raw))
    found = []
    for start, end in functions(text):
        first = raw.count("\n", 0, start) + 1
        length = raw.count("\n", start, end) + 1
        name = re.sub(r"\s+", " ", text[start:text.find("(", start)]).strip().split(" ")[-1]
        if length > limit:
            found.append((length, first, name))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("dirs", nargs="*")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = args.dirs or COMPONENTS
    total = 0
    for d in dirs:
        count = 0
        for base, _, files in sorted(os.walk(os.path.join(root, d))):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".cc", ".hpp")):
                    continue
                path = os.path.join(base, f)
                for length, first, name in long_functions(path, args.limit):
                    print(f"{length:5d}  {os.path.relpath(path, root)}:{first}  {name}")
                    count += 1
        print(f"{d}: {count} over {args.limit} lines")
        total += count
    print(f"total: {total} over {args.limit} lines")


if __name__ == "__main__":
    sys.exit(main())
