"""The write-or-check step the doc generators in scripts/ share (standard library only)."""
import sys


def write_or_check(path, text, check, generator):
    """Writes `text` to `path`; with `check`, writes nothing and returns 1 (naming
    `generator` on stderr) when the file does not hold exactly `text`, else 0."""
    if check:
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            sys.stderr.write("{} is stale: run {}\n".format(path, generator))
            return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return 0
