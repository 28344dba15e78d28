"""Registered base paths (pylance 14's multi-base datasets): ``DatasetBasePath``, as
``write_dataset(initial_bases=...)``, ``LanceDataset.add_bases`` and
``LanceDataset.base_paths()`` take and return them. An external blob URI under a
registered base is stored relative to it (the base's id and the rest of the path), as
pylance stores it; data files are written to the dataset's own location
(``target_bases`` is refused)."""

from typing import Any, List, Optional, Tuple


class DatasetBasePath:
    """A storage location registered with a dataset: ``path`` (a URI or a local
    directory), an optional unique ``name``, and whether it is another dataset's root.
    ``id`` is given by the dataset when the base is registered (0 before)."""

    def __init__(self, path: str, name: Optional[str] = None, is_dataset_root: bool = False,
                 id: Optional[int] = None):
        if not isinstance(path, str) or not path:
            raise ValueError("DatasetBasePath needs a path (a URI or a directory)")
        self._path = path
        self._name = name
        self._is_dataset_root = bool(is_dataset_root)
        self._id = 0 if id is None else int(id)

    @property
    def id(self) -> int:
        """The id the dataset gave the base (0 before it is registered)."""
        return self._id

    @property
    def name(self) -> Optional[str]:
        """The base's name, if it has one."""
        return self._name

    @property
    def path(self) -> str:
        """Where the base is: a URI or a local directory, as given."""
        return self._path

    @property
    def is_dataset_root(self) -> bool:
        """True if the base is another dataset's root."""
        return self._is_dataset_root

    def __repr__(self) -> str:
        name = "None" if self.name is None else f'Some("{self.name}")'
        return (f"DatasetBasePath(id={self.id}, name={name}, path={self.path}, "
                f"is_dataset_root={str(self.is_dataset_root).lower()})")

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, DatasetBasePath) and self.id == other.id and self.name == other.name
                and self.path == other.path and self.is_dataset_root == other.is_dataset_root)


def base_tuples(bases: Any, what: str) -> List[Tuple[Optional[str], str, bool, int]]:
    """``bases`` (DatasetBasePath objects, pylance's included) as (name, path,
    is_dataset_root, id) tuples (id 0: the dataset picks one); anything else is refused
    naming ``what``."""
    if bases is None:
        return []
    if not isinstance(bases, (list, tuple)):
        raise TypeError(f"{what} must be a list of DatasetBasePath")
    out = []
    for b in bases:
        path = getattr(b, "path", None)
        if not isinstance(path, str):
            raise TypeError(f"{what} must be a list of DatasetBasePath, got {type(b).__name__}")
        out.append((getattr(b, "name", None), path, bool(getattr(b, "is_dataset_root", False)),
                    int(getattr(b, "id", 0) or 0)))
    return out
