"""Screenshots of ``ckpt stats --hist`` and ``ckpt trend --plot`` as a real terminal shows them.

Each command runs in a tmux window of a fixed size (a real terminal: ckpt sees a tty, colours on, the window's
width); the screen is captured with its colours (``tmux capture-pane -e``), turned into HTML by rich
(``Text.from_ansi`` and ``Console.export_html``, fonts local: DejaVu Sans Mono) and photographed by headless
Chromium into ``docs/screens/<name>.png``. Needs tmux, chromium and rich (apt-get install tmux chromium).

Usage (from a checkout, with ckpt installed in the running Python's environment):
    python docs/terminal_screens.py
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screens"
CORPUS = ROOT / "tests" / "data" / "corpus"
SCREENS = [
    ("stats_hist", "ckpt stats --hist tf1_estimator/model.ckpt-200 'dnn/*'", 150, 18),
    ("trend_plot", "ckpt trend --plot seed_slots/tf_ckpts 'net/l1/kernel*'", 96, 36),
]
CELL_W, CELL_H = 8.4, 17  # px of one character cell at 14px DejaVu Sans Mono, line-height 17px


def capture(command: str, width: int, height: int) -> str:
    """What a ``width`` x ``height`` tmux window shows after ``command`` ran in it, with colour escapes."""
    session = f"ckpt-screens-{os.getpid()}"
    bin_dir = str(Path(sys.executable).parent)
    shell = (f"env -i HOME={tempfile.gettempdir()} TERM=xterm-256color LANG=C.UTF-8 PATH={bin_dir}:/usr/bin:/bin "
             f"bash --norc --noprofile")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), shell],
                   check=True)
    try:
        keys = f"PS1='$ '; cd {CORPUS}; clear; {command}; tmux wait-for -S {session}-done"
        time.sleep(0.3)
        subprocess.run(["tmux", "send-keys", "-t", session, keys, "Enter"], check=True)
        subprocess.run(["timeout", "60", "tmux", "wait-for", f"{session}-done"], check=True)
        time.sleep(0.3)
        screen = subprocess.run(["tmux", "capture-pane", "-p", "-e", "-t", session], check=True,
                                capture_output=True, text=True).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    lines = screen.rstrip("\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    # the typed line (cd; clear; command; wait-for) scrolled away by clear: show the command as typed
    lines = [line for line in lines if "wait-for" not in line and not line.rstrip().endswith("$")]
    return f"\x1b[1m$ {command}\x1b[0m\n" + "\n".join(lines) + "\n"


def to_html(ansi: str, width: int) -> str:
    """The screen as a dark terminal page (rich's HTML export, local monospace font)."""
    from rich.console import Console
    from rich.terminal_theme import MONOKAI
    from rich.text import Text

    console = Console(record=True, width=width, file=open(os.devnull, "w"), color_system="truecolor")
    console.print(Text.from_ansi(ansi), soft_wrap=True)
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><style>"
            "body{{margin:0;background:{background}}}"
            "pre{{margin:0;padding:12px 16px;font-family:'DejaVu Sans Mono',monospace;font-size:14px;"
            "line-height:17px;color:{foreground}}}"
            ".c{{display:inline-block;width:1ch;overflow:visible;text-align:center}}"
            ".b{{display:inline-block;width:1ch;overflow:visible;text-align:center;transform:scale(1.3,1.9)}}"
            "</style></head><body><pre>{code}</pre></body></html>")
    html = console.export_html(theme=MONOKAI, inline_styles=True, code_format=page)
    # One cell per character, as a terminal draws it: a glyph the monospace font lacks (Braille) comes from
    # a fallback font of another width, which would shift the rest of its line.
    html = re.sub("[\u2800-\u28ff]", lambda m: f"<span class=b>{m.group()}</span>", html)  # dots fill the cell
    return re.sub("[\u2500-\u27ff]", lambda m: f"<span class=c>{m.group()}</span>", html)


def screenshot(html: str, png: Path, width: int, lines: int) -> None:
    """``html`` rendered by headless Chromium into ``png`` (a window that just fits ``width`` x ``lines``)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium not found (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "screen.html"
        page.write_text(html, encoding="utf-8")
        size = f"{int(width * CELL_W) + 40},{int(lines * CELL_H) + 28}"
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--no-first-run", f"--user-data-dir={tmp}/profile", "--hide-scrollbars",
                        f"--window-size={size}", f"--screenshot={png}", page.as_uri()],
                       check=True, capture_output=True, timeout=120)


def main() -> None:
    """Capture every screen of :data:`SCREENS` into docs/screens/<name>.png (and its text as .txt)."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name, command, width, height in SCREENS:
        ansi = capture(command, width, height)
        plain = subprocess.run(["sed", "-e", r"s/\x1b\[[0-9;]*m//g"], input=ansi, capture_output=True,
                               text=True, check=True).stdout
        (OUT / f"{name}.txt").write_text(plain, encoding="utf-8")
        screenshot(to_html(ansi, width), OUT / f"{name}.png", width, len(ansi.splitlines()))
        print(f"wrote {OUT / name}.png")


if __name__ == "__main__":
    main()
