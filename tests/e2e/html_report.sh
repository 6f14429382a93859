#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# html_report.sh -- `--html F` on a real resume FAIL and a real health FAIL:
# the page references nothing over the network, and a real headless
# Chromium renders it with the outcome, the first divergence's path and
# step, the SVG plots (a line per execution, the divergence marked) and,
# for resume, the state-after-load table; its screenshot is a PNG.  The
# runs are rows of fixtures/expected.tsv, with the options and path given
# there.
. "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
py=${TP_PYTHON:?}
[ -x "$py" ] || fail "$py is missing: run make setup"
chrome=$(command -v chromium || command -v chromium-browser) ||
    fail "no chromium: run make setup (tools/scripts/setup.sh installs Debian's chromium)"

tp_setup daemon agent

# row CHECK FIXTURE COLUMN: a column of the fixture's row in the table
# (4: the first divergence's path, 7: the options).
row() {
    awk -F'\t' -v c="$1" -v f="$2" -v k="$3" '$1 == c && $2 == f { print $k; exit }' \
        "$root/fixtures/expected.tsv"
}

# chrome_run ARGS...: one headless Chromium with its profile here, bounded.
chrome_run() {
    timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --no-first-run --user-data-dir="$WORK/chrome-profile" "$@" 2>>"$WORK/chrome.err"
}

# page CHECK FIXTURE NAME: runs the fixture's row with --html NAME.html and
# checks the page.
page() {
    local check=$1 fixture=$2 name=$3 opts want_path
    opts=$(row "$check" "$fixture" 7)
    want_path=$(row "$check" "$fixture" 4)
    [ -n "$want_path" ] || fail "no row for $check $fixture in fixtures/expected.tsv"
    mkdir -p "$WORK/$name" && cd "$WORK/$name" || fail "mkdir $name"
    cp "$root/fixtures/$(dirname "$fixture")"/*.py . || fail "cannot copy the fixtures"
    # shellcheck disable=SC2086 # the row's options are words
    "$TP_RUN" "$check" $opts --json "$WORK/$name.json" --html "$WORK/$name.html" \
        -- "$py" "$(basename "$fixture")" >"$WORK/$name.out" 2>"$WORK/$name.err"
    got=$?
    cd "$WORK" || fail "cd $WORK"
    [ "$got" = 1 ] || fail "$check $fixture exited $got, want 1 (FAIL): $(tail -20 "$WORK/$name.err")"
    [ -s "$name.html" ] || fail "no HTML report for $check"

    # Self-contained: no address in a src or href, nothing that loads.
    if grep -Eio '(src|href)[[:space:]]*=[[:space:]]*["'"'"']?[^"'"'"' >]*' "$name.html" |
        grep -Eiq 'https?:|=["'"'"']?//'; then
        fail "$name.html references the network: $(grep -Eio '(src|href)=[^ >]*' "$name.html")"
    fi
    ! grep -Eiq '<script|<link|<img|<iframe|@import|url\(' "$name.html" ||
        fail "$name.html loads something: $(grep -Eio '<script[^>]*|<link[^>]*|<img[^>]*|@import[^;]*|url\([^)]*' "$name.html")"

    chrome_run --dump-dom "file://$WORK/$name.html" >"$name.dom" ||
        fail "chromium could not render $name.html: $(tail -5 chrome.err)"
    "$py" - "$name.dom" "$name.json" "$want_path" "$check" <<'PY' || fail "$name.html as rendered: see above"
import json, sys
from html.parser import HTMLParser

dom_file, report_file, want_path, check = sys.argv[1:5]
report = json.load(open(report_file))
fd = report["first_divergence"]
assert report["outcome"] == "FAIL" and fd["path"] == want_path, (report["outcome"], fd)


class Dom(HTMLParser):
    """The rendered DOM as a tree of (tag, attrs, children, text)."""

    def __init__(self):
        super().__init__()
        self.root = {"tag": "#root", "attrs": {}, "kids": [], "text": ""}
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        n = {"tag": tag, "attrs": dict(attrs), "kids": [], "text": ""}
        self.stack[-1]["kids"].append(n)
        if tag not in ("meta", "br", "input", "link", "img"):
            self.stack.append(n)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        self.stack[-1]["text"] += data


def walk(n):
    yield n
    for k in n["kids"]:
        yield from walk(k)


def text(n):
    return n["text"] + "".join(text(k) for k in n["kids"])


def find(n, pred):
    return [m for m in walk(n) if pred(m)]


def by_id(n, i):
    got = find(n, lambda m: m["attrs"].get("id") == i)
    assert got, "no element #%s in the rendered page" % i
    return got[0]


d = Dom()
d.feed(open(dom_file).read())
root = d.root

# the verdict: the outcome word, prominent
assert text(by_id(root, "outcome")).strip() == "FAIL", text(by_id(root, "outcome"))
# the first divergence: its path and step
first = by_id(root, "first-divergence")
cells = {m["attrs"]["data-key"]: text(m).strip() for m in find(first, lambda m: "data-key" in m["attrs"])}
assert cells.get("path") == want_path, cells
assert cells.get("step") == str(fd["step"]), (cells, fd["step"])
# the explanation
assert find(by_id(root, "explanation"), lambda m: m["tag"] == "li"), "no explanation lines"
# the plots: per metric an SVG with a line per execution and the marker
roles = [e["role"] for e in report["evidence"]["executions"]]
for plot in ("plot-loss", "plot-grad-norm", "plot-lr"):
    fig = by_id(root, plot)
    svgs = find(fig, lambda m: m["tag"] == "svg")
    assert svgs, "%s: no <svg>" % plot
    drawn = {
        g["attrs"].get("data-role"): len(find(g, lambda m: m["tag"] in ("polyline", "path")))
        for g in find(svgs[0], lambda m: m["tag"] == "g" and "series" in m["attrs"].get("class", ""))
    }
    for r in roles:
        assert drawn.get(r, 0) >= 1, "%s: no line for %s: %r" % (plot, r, drawn)
    marks = find(svgs[0], lambda m: "divergence-marker" in m["attrs"].get("class", ""))
    assert len(marks) == 1 and marks[0]["tag"] == "line", "%s: no divergence marker" % plot
    ticks = [text(t).strip() for t in find(svgs[0], lambda m: m["tag"] == "text")]
    assert len(ticks) >= 6, "%s: too few tick labels: %r" % (plot, ticks)
    assert "left out" in text(fig), "%s does not say what was left out" % plot
# resume: R's state after loading, group by group
if check == "resume":
    sal = by_id(root, "state-after-load")
    rows = {m["attrs"]["data-component"]: text(m) for m in find(sal, lambda m: "data-component" in m["attrs"])}
    assert "differs" in rows.get("scheduler", ""), rows
    assert "equal" in rows.get("model", "") and "equal" in rows.get("optimizer", ""), rows
print("ok", check, fd["path"], "at step", fd["step"])
PY

    chrome_run --window-size=1200,1600 --screenshot="$WORK/$name.png" "file://$WORK/$name.html" \
        >/dev/null || fail "chromium could not take a screenshot of $name.html: $(tail -5 chrome.err)"
    [ -s "$name.png" ] || fail "no screenshot of $name.html"
    [ "$(head -c 8 "$name.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
        fail "the screenshot of $name.html is not a PNG"
}

page resume resume/scheduler_not_restored.py resume
page health health/exploding.py health
# the health fixture fails at its step 4 (fixtures/health/exploding.py)
"$py" -c 'import json, sys; fd = json.load(open(sys.argv[1]))["first_divergence"]
sys.exit(fd["step"] != 4)' health.json || fail "health: the first divergence is not at step 4: $(cat health.json)"
echo "ok $TP_NAME"
