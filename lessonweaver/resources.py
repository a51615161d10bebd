"""Where the shipped SQL files and templates live.

In a source checkout (the editable install the Makefile makes) they sit beside the package, at the
repository root; in a built wheel they are copied into the package under `_resources/`.
"""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Return the folder `sql` or `templates`, wherever this installation keeps it."""
    for candidate in (_PACKAGE / "_resources" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"lessonweaver installation is missing its '{name}' folder")


def sql_path(*parts: str) -> Path:
    return resource_dir("sql").joinpath(*parts)
