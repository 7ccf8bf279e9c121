#!/usr/bin/env python3
"""manpages.py: writes zbso's man pages from its own --help texts, so the two never
disagree: zbso.1 (the command list of `zbso --help`, the configuration, the files) and
zbso-CMD.1 for each command (`zbso CMD --help`, verbatim). Standard library only.

usage: manpages.py ZBSO_BINARY OUTDIR [--date YYYY-MM-DD]

The date defaults to SOURCE_DATE_EPOCH's (reproducible builds), else today's.
Fails (exit 1, naming the command) when a --help cannot be read."""

import datetime
import os
import re
import subprocess
import sys


def help_of(binary, *args):
    """The stdout of `binary ARGS --help`; raises SystemExit naming the command."""
    cmd = [binary, *args, "--help"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "LC_ALL": "C"})
    if p.returncode != 0 or not p.stdout.strip():
        sys.exit(f"manpages.py: '{' '.join(cmd)}' failed (status {p.returncode}): "
                 f"{p.stderr.strip()}")
    return p.stdout


def roff_text(line):
    """One line of text for roff: backslashes escaped, a leading . or ' made literal,
    and hyphens of options kept as ASCII hyphen-minus (\\-) so they can be copied."""
    line = line.replace("\\", "\\e").replace("-", "\\-")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def verbatim(text):
    """Lines shown as they are (no filling, no adjustment)."""
    out = [".nf"]
    out += [roff_text(line) for line in text.rstrip("\n").split("\n")]
    out.append(".fi")
    return "\n".join(out)


def split_usage(text):
    """(usage block, rest): the leading lines from "usage:" up to the first blank line or
    the first line that does not go on with the usage."""
    lines = text.rstrip("\n").split("\n")
    i = 0
    if lines and lines[0].startswith("usage:"):
        i = 1
        while i < len(lines) and lines[i].strip() and \
                lines[i].lstrip().startswith(("zbso ", "[", "-")):
            i += 1
    pad = len("usage: ")
    usage = "\n".join([lines[0][pad:]] + [ln[pad:] if ln[:pad].isspace() else ln
                                          for ln in lines[1:i]]) if i else ""
    return usage, "\n".join(lines[i:]).strip("\n")


def page(name, section_date, version, summary, help_text, see_also):
    usage, rest = split_usage(help_text)
    out = [f'.TH {name.upper()} 1 "{section_date}" "zbso {version}" "zbso manual"',
           ".SH NAME", f"{roff_text(name)} \\- {roff_text(summary)}"]
    if usage:
        out += [".SH SYNOPSIS", verbatim(usage)]
    if rest:
        out += [".SH DESCRIPTION", verbatim(rest)]
    out += [".SH SEE ALSO", ",\n".join(f".BR {p} (1)" for p in see_also)]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--date"):
        sys.exit(__doc__.split("\n\n")[1])
    binary, outdir = argv[1], argv[2]
    if len(argv) == 5:
        date = argv[4]
    else:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
                if epoch else datetime.datetime.now(datetime.timezone.utc))
        date = when.date().isoformat()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=60).stdout.split()[-1]
    top = help_of(binary)
    commands = re.findall(r"^  (\S+) +(.+)$", top.split("commands:", 1)[-1], re.M)
    if not commands:
        sys.exit(f"manpages.py: no command list in '{binary} --help'")
    os.makedirs(outdir, exist_ok=True)
    pages = [f"zbso-{c}" for c, _ in commands]
    listing = "\n".join(f"{c:<12}{s}" for c, s in commands)
    intro = (
        "zbso learns, over the recurrences of a DNN training job, the batch size that\n"
        "minimizes eta * energy + (1 - eta) * max_power * time. It is a C implementation of\n"
        "the batch size optimizer server of Zeus, wire-compatible with the Zeus Python\n"
        "client.\n\nCommands (one page each, e.g. man zbso-run):\n" + listing + "\n\n"
        "Exit status: 0 success, 1 a runtime failure (database, network), 2 a usage\n"
        "error (zbso monitor: the command's status).\n\n"
        "Configuration: ZEUS_BSO_* environment variables, also read from a .env file in\n"
        "the working directory or its nearest parent; flags win over the environment,\n"
        "which wins over .env. See zbso-serve(1).")
    with open(os.path.join(outdir, "zbso.1"), "w", encoding="utf-8") as f:
        f.write(page("zbso", date, version, "the Zeus batch size optimizer, in C",
                     "usage: zbso COMMAND [OPTIONS]\n       zbso --help | --version\n\n"
                     + intro, pages))
    for (cmd, summary), name in zip(commands, pages):
        with open(os.path.join(outdir, name + ".1"), "w", encoding="utf-8") as f:
            f.write(page(name, date, version, summary, help_of(binary, cmd),
                         ["zbso"] + [p for p in pages if p != name]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
