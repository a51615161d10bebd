"""Packs: a detector or an adapter is one SQL file, dropped into a folder alone or kept in a folder of
its own beside the fixtures that test it, so that adding one touches nothing else:

    DIR/<name>.sql              a file dropped in
    DIR/<name>/<name>.sql       a pack: the SQL, named after its folder,
    DIR/<name>/tests/           and its tests
"""

from dataclasses import dataclass
from pathlib import Path

from lessonweaver.sqlfile import SqlFileError


@dataclass(frozen=True)
class Pack:
    sql: Path
    tests: Path | None  # None for a file dropped in alone

    @property
    def folder(self) -> str | None:
        """The pack's folder name, which its id or format must repeat; None for a file dropped in alone."""
        return self.sql.parent.name if self.tests else None


def find_packs(folder: Path) -> list[Pack]:
    """Every pack in `folder`, by name. A subfolder with SQL files but none named after it is an error
    (a renamed file would otherwise be passed over in silence); other subfolders are not packs."""
    found = [Pack(p, None) for p in folder.glob("*.sql")]
    for sub in (p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        own = sub / f"{sub.name}.sql"
        if own.is_file():
            found.append(Pack(own, sub / "tests"))
        elif any(sub.glob("*.sql")):
            raise SqlFileError(f"{sub}: a pack's SQL file must be named after its folder: {own.name}")
    return sorted(found, key=lambda p: (p.sql.stem, str(p.sql)))
