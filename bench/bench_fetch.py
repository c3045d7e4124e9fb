"""fetch_url of a 5 MB HTML page: CPU time and peak memory, against a reference in the same run.

Each case runs in a fresh process that serves the page from a local HTTP server (loopback,
allowed in the user settings of a throw-away config dir) and calls the real fetch_url tool;
after a warm-up call on a tiny page (imports are start-up costs), the figures are that
process's CPU time for the call (server thread included) and its peak RSS (the kernel's
VmHWM), and the RSS it had before the call (interpreter, imports, the page itself).

Reference: the same process fetching the same bytes with plain httpx and tokenizing them
with the standard library's html.parser (no conversion at all): the cost of just looking
at the markup once in Python. Targets (issue 19): at most 1 s of CPU and 150 MB peak RSS
for a 5 MB page; markdownify on BeautifulSoup took 21-36 s and up to 953 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import verdict

CHILD = r"""
import json, resource, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
sys.path.insert(0, sys.argv[4])
from bench_fetch import make_page

kind, mode, max_length = sys.argv[1], sys.argv[2], int(sys.argv[3])
page = make_page(kind).encode()

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = page if self.path == "/page" else b"<p>warm-up</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{httpd.server_address[1]}"
url = base + "/page"

import anyio, httpx
from codingcode.tools import ToolExecCtx, ToolService

def reference() -> int:
    from html.parser import HTMLParser
    text = httpx.get(url, trust_env=False).content.decode()
    parser = HTMLParser()
    parser.feed(text)
    parser.close()
    return len(text)

def ours() -> int:
    out = anyio.run(ToolService.default().call, "fetch_url",
                    {"url": url, "max_length": max_length}, ToolExecCtx())
    return len(out)

# Warm-up on a tiny page: imports and first-call set-up are start-up costs, not the page's.
if mode == "ours":
    anyio.run(ToolService.default().call, "fetch_url", {"url": base + "/small"}, ToolExecCtx())
else:
    httpx.get(base + "/small", trust_env=False)
def hwm_mb() -> float:
    # VmHWM: this process image's peak RSS. (ru_maxrss would carry over the peak of the
    # process that forked us, e.g. a big pytest, since exec does not reset it.)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

before = hwm_mb()
cpu = time.process_time()
size = ours() if mode == "ours" else reference()
cpu = time.process_time() - cpu
peak = hwm_mb()
print(json.dumps({"cpu": cpu, "before_mb": before, "peak_mb": peak, "out": size}))
"""

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "agents",
    "sandbox",
    "every",
    "tool",
    "call",
]


def make_page(kind: str, size: int = 5_000_000) -> str:
    """A deterministic HTML page of about ``size`` characters.

    ``article``: headings, paragraphs with links and inline code, lists, small tables, code
    blocks and scripts, like a long documentation page. ``table``: one huge data table of
    tiny cells. ``sparse``: nested divs with long class lists, data attributes and one short
    link each, the most markup per character of text (the whole page must be converted).
    """
    parts = [
        "<!doctype html><html><head><title>Bench</title><style>body{color:red}</style>"
        "<script>var tracking = 1;</script></head><body><main>"
    ]
    n, i = len(parts[0]), 0
    if kind == "table":
        parts.append("<table><tr><th>id</th><th>name</th><th>value</th></tr>")
    while n < size:
        i += 1
        w = WORDS[i % len(WORDS)]
        if kind == "table":
            s = f"<tr><td>{i}</td><td>{w}</td><td>{i * 7 % 1000}</td></tr>"
        elif kind == "sparse":
            s = (
                f"<div class='card card-{i % 7} flex items-center justify-between' "
                f"data-id='{i}' data-track='{w}-{i}' style='margin:0;padding:4px'>"
                f"<div class='inner'><span class='icon icon-{w}' aria-hidden='true'></span>"
                f"<a class='lnk' href='/item/{i}?ref=list&amp;utm=bench'>{w}</a></div></div>"
            )
        else:
            k = i % 6
            text = " ".join(WORDS[(i * j) % len(WORDS)] for j in range(40))
            s = [
                f"<h2>Section {i}</h2>",
                f"<div class='c'><p>{text} <a href='/p/{i}'>link {i}</a> <b>bold</b> "
                f"<code>x_{i}</code></p></div>",
                "<ul>" + "".join(f"<li>item {j} <em>{w}</em></li>" for j in range(8)) + "</ul>",
                "<table><tr><th>a</th><th>b</th></tr>"
                + "".join(f"<tr><td>{j}</td><td>{w}</td></tr>" for j in range(5))
                + "</table>",
                f"<pre><code>def f{i}(x):\n    return x * {i}\n</code></pre>"
                f"<script>console.log({i})</script>",
                f"<div><div><span>{text}</span></div></div>",
            ][k]
        parts.append(s)
        n += len(s)
    parts.append("</table>" if kind == "table" else "")
    parts.append("</main></body></html>")
    return "".join(parts)


def run_case(kind: str, mode: str, max_length: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config"
        config.mkdir()
        (config / "settings.json").write_text(
            json.dumps({"web": {"fetch": {"allow_private_hosts": ["127.0.0.1"]}}})
        )
        env = {**os.environ, "CODINGCODE_CONFIG_DIR": str(config), "CODINGCODE_STATE_DIR": tmp}
        here = str(Path(__file__).resolve().parent)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, kind, mode, str(max_length), here],
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
            check=True,
        )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    cases = [
        ("article", 100_000),
        ("article", 500_000),
        ("table", 100_000),
        ("table", 500_000),
        ("sparse", 100_000),
        ("sparse", 500_000),
    ]
    print(
        f"{'page (5 MB)':10} {'max_length':>10} {'ours s':>7} {'ref s':>7} {'ratio':>6} "
        f"{'peak MB':>8} {'ref MB':>7} {'base MB':>8}  targets: <= 1 s, <= 150 MB"
    )
    for kind, max_length in cases:
        ours: list[dict[str, float]] = []
        ref: list[dict[str, float]] = []
        for _ in range(opts.runs):  # interleaved, so load affects both alike
            ours.append(run_case(kind, "ours", max_length))
            ref.append(run_case(kind, "reference", max_length))
        o = sorted(ours, key=lambda r: r["cpu"])[len(ours) // 2]
        r = sorted(ref, key=lambda r: r["cpu"])[len(ref) // 2]
        peak = max(x["peak_mb"] for x in ours)
        ok = "ok" if o["cpu"] <= 1.0 and peak <= 150 else "OVER TARGET"
        print(
            f"{kind:10} {max_length:10} {o['cpu']:7.2f} {r['cpu']:7.2f} "
            f"{o['cpu'] / r['cpu']:6.2f} {peak:8.1f} {max(x['peak_mb'] for x in ref):7.1f} "
            f"{o['before_mb']:8.1f}  {ok} (time ratio {verdict(o['cpu'] / r['cpu'], 1.0)})"
        )


if __name__ == "__main__":
    main()
