"""Scale a lessonweaver-format corpus up by copying it under new trace ids.

Generating millions of traces takes the generator about half an hour per million here; memory and
throughput at several gigabytes only need more of the same kind of data. Copy k of a file gets the
suffix `-c<k>` on every trace id (the first `"trace_id":"...` of each line), so every copy loads as new
traces, with the same mix of problems.

    python benchmarks/replicate.py SRC_DIR OUT_DIR --copies 3
"""

import argparse
import re
import sys
from pathlib import Path

TRACE_ID = re.compile(rb'^(\s*\{\s*"trace_id"\s*:\s*"[^"]*)"')


def replicate(src: Path, out: Path, copies: int) -> tuple[int, int]:
    """Write `copies` renamed copies of every .jsonl file in `src` into `out`; returns (files, bytes)."""
    out.mkdir(parents=True, exist_ok=True)
    files = written = 0
    for path in sorted(src.glob("*.jsonl")):
        for k in range(1, copies + 1):
            suffix = f"-c{k}".encode()
            target = out / f"{path.stem}-c{k}.jsonl"
            with path.open("rb") as fh, target.open("wb") as dst:
                for line in fh:
                    renamed = TRACE_ID.sub(lambda m: m.group(1) + suffix + b'"', line, count=1)
                    dst.write(renamed)
            files += 1
            written += target.stat().st_size
    return files, written


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src", type=Path, help="a folder of lessonweaver-format .jsonl files (from generate.py)")
    p.add_argument("out", type=Path)
    p.add_argument("--copies", type=int, default=2)
    args = p.parse_args()
    if not args.src.is_dir():
        print(f"replicate: no folder {args.src}", file=sys.stderr)
        return 2
    files, written = replicate(args.src, args.out, args.copies)
    print(f"{files} files, {written / 1e6:.0f} MB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
