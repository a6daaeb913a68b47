"""Deterministic code-review rules, a port of examples/review-rules.ts: same text, same findings."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple, TypedDict


class Finding(TypedDict):
    file: str
    line: int
    severity: str
    message: str


class SourceFile(TypedDict):
    file: str
    lines: List[Tuple[int, str]]
    complete: bool


DEBUG_PATTERNS = [
    (re.compile(r"\bconsole\.(log|debug|trace|dir)\s*\("), "leftover console output"),
    (re.compile(r"^\s*debugger\s*;?\s*$"), "leftover debugger statement"),
    (re.compile(r"^\s*print\s*\("), "leftover print() call"),
    (re.compile(r"\bSystem\.out\.print(ln)?\s*\("), "leftover System.out output"),
    (re.compile(r"\bfmt\.Print(ln|f)?\s*\("), "leftover fmt.Print output"),
    (re.compile(r"\bvar_dump\s*\(|\bdd\s*\("), "leftover dump call"),
    (re.compile(r"\bbinding\.pry\b|\bbyebug\b|\bpdb\.set_trace\(\)|\bbreakpoint\(\)"), "leftover debugger breakpoint"),
]

SECRET_PATTERNS = [
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "looks like an AWS access key id"),
    (re.compile(r"-----BEGIN (RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----"), "private key in source"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"), "looks like a GitHub token"),
    (re.compile(r"\b(sk|rk)_(live|test)_[A-Za-z0-9]{16,}\b"), "looks like a Stripe secret key"),
    (re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}\b"), "looks like a Slack token"),
    (re.compile(r"\bsk_service_[0-9A-Za-z]{49}\b"), "looks like a taskhook platform key"),
    (
        re.compile(r"\b(api[_-]?key|secret|password|passwd|token|auth)\b[\"']?\s*[:=]\s*[\"'][^\"'\s]{12,}[\"']", re.I),
        "hard-coded credential",
    ),
]

MAX_FUNCTION_LINES = 60
MAX_LINE_LENGTH = 160
CONTROL_WORDS = {"if", "for", "while", "switch", "catch", "with", "return", "else", "do", "try"}
_TODO = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b[:\s]?(.*)$")
_PY_START = re.compile(r"^(\s*)(async\s+)?def\s+(\w+)")
_C_START = re.compile(
    r"^\s*(export\s+)?(async\s+)?(function\s*\*?\s*(\w+)|(?:public|private|protected|static|\s)*[\w<>\[\],\s]+\s+(\w+)\s*\([^;]*\)\s*(\{|throws)|(const|let|var)\s+(\w+)\s*=\s*(async\s*)?(\([^)]*\)|\w+)\s*=>\s*\{|func\s+(\([^)]*\)\s*)?(\w+))"
)
_STRING = re.compile(r"([\"'`])(?:\\.|(?!\1).)*\1")


def _js_len(text: str) -> int:
    """String length as JavaScript counts it (UTF-16 code units), so long-line findings match."""
    return len(text.encode("utf-16-le")) // 2


def line_findings(src: SourceFile) -> List[Finding]:
    out: List[Finding] = []
    for line, text in src["lines"]:
        for pattern, message in DEBUG_PATTERNS:
            if pattern.search(text):
                out.append({"file": src["file"], "line": line, "severity": "warning", "message": message})
        todo = _TODO.search(text)
        if todo:
            note = (todo.group(2) or "").strip()
            message = f"{todo.group(1)} left in code{': ' + note if note else ''}"
            out.append({"file": src["file"], "line": line, "severity": "info", "message": message})
        for pattern, message in SECRET_PATTERNS:
            if pattern.search(text):
                out.append(
                    {"file": src["file"], "line": line, "severity": "error", "message": f"{message}; move it to configuration"}
                )
                break
        if _js_len(text) > MAX_LINE_LENGTH:
            out.append(
                {"file": src["file"], "line": line, "severity": "info", "message": f"line is {_js_len(text)} characters long"}
            )
    return out


def long_functions(src: SourceFile) -> List[Finding]:
    if not src["complete"]:
        return []
    out: List[Finding] = []
    lines = src["lines"]
    python = src["file"].endswith(".py")
    for i, (number, text) in enumerate(lines):
        m = (_PY_START if python else _C_START).search(text)
        if not m:
            continue
        name: Optional[str] = m.group(3) if python else (m.group(4) or m.group(5) or m.group(8) or m.group(12) or "function")
        if name and name in CONTROL_WORDS:
            continue
        end = i
        if python:
            indent = len(m.group(1) or "")
            for j in range(i + 1, len(lines)):
                t = lines[j][1]
                if t.strip() == "":
                    continue
                if len(t) - len(t.lstrip()) <= indent:
                    break
                end = j
        else:
            depth = 0
            opened = False
            for j in range(i, len(lines)):
                for ch in _STRING.sub("", lines[j][1]):
                    if ch == "{":
                        depth += 1
                        opened = True
                    elif ch == "}":
                        depth -= 1
                end = j
                if opened and depth <= 0:
                    break
        length = end - i + 1
        if length > MAX_FUNCTION_LINES:
            out.append(
                {
                    "file": src["file"],
                    "line": number,
                    "severity": "warning",
                    "message": f"function {name} is {length} lines long (over {MAX_FUNCTION_LINES}); consider splitting it",
                }
            )
    return out


def is_unified_diff(text: str) -> bool:
    return re.search(r"^(diff --git |--- .+\n\+\+\+ |@@ -\d+(,\d+)? \+\d+(,\d+)? @@)", text, re.M) is not None


def parse_unified_diff(text: str) -> List[SourceFile]:
    files: List[SourceFile] = []
    current: Optional[SourceFile] = None
    new_line = 0
    previous = ""
    for raw in re.split(r"\r?\n", text):
        header = raw.startswith("+++ ") and (previous.startswith("--- ") or current is None)
        previous = raw
        if header:
            name = re.sub(r"^b/", "", raw[4:]).split("\t")[0]
            current = {"file": name, "lines": [], "complete": False}
            if name != "/dev/null":
                files.append(current)
            continue
        hunk = re.match(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", raw)
        if hunk:
            new_line = int(hunk.group(1))
            continue
        if current is None or raw.startswith("--- ") or raw.startswith("diff --git") or raw.startswith("index "):
            continue
        if raw.startswith("+"):
            current["lines"].append((new_line, raw[1:]))
            new_line += 1
        elif raw.startswith(" ") or raw == "":
            new_line += 1
    return files


def looks_like_code(text: str) -> bool:
    lines = [line for line in re.split(r"\r?\n", text) if line.strip() != ""]
    if not lines:
        return False
    codeish = [
        line
        for line in lines
        if re.search(r"[;{}()=]|^\s*(def|class|import|from|function|const|let|var|#include|package)\b", line)
    ]
    return len(codeish) / len(lines) >= 0.3 and len(lines) >= 2


def review(text: str, file_name: str = "input") -> Dict[str, Any]:
    """Reviews a diff or a whole source file: ``{"files": n, "findings": [...]}``."""
    if is_unified_diff(text):
        sources = parse_unified_diff(text)
    else:
        numbered = [(i + 1, t) for i, t in enumerate(re.split(r"\r?\n", text))]
        sources = [{"file": file_name, "lines": numbered, "complete": True}]
    findings = [f for s in sources for f in line_findings(s) + long_functions(s)]
    findings.sort(key=lambda f: (f["file"], f["line"]))
    return {"files": len(sources), "findings": findings}


def summarize(files: int, findings: List[Finding]) -> str:
    if not findings:
        return f"Reviewed {files} file(s): no findings."

    def by(severity: str) -> int:
        return len([f for f in findings if f["severity"] == severity])

    return (
        f"Reviewed {files} file(s): {len(findings)} finding(s) "
        f"({by('error')} error, {by('warning')} warning, {by('info')} info)."
    )
