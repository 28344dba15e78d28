"""A dataset's config and metadata maps, as pylance 14's ``LanceDataset`` reads and
changes them: ``config()``, ``metadata``, ``schema_metadata``, ``update_config``,
``update_metadata``, ``update_schema_metadata``, ``update_field_metadata``,
``delete_config_keys`` and the deprecated ``replace_*`` forms. Each change is one
metadata-only commit (an ``UpdateConfig`` transaction, as pylance writes it)."""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Tuple, TypedDict

from . import _lancer


class AutoCleanupConfig(TypedDict):
    """Automatic cleanup (``write_dataset(auto_cleanup_options=)``,
    ``optimize.enable_auto_cleanup``): every ``interval`` versions, the versions older
    than ``older_than_seconds`` are removed."""

    interval: int
    older_than_seconds: int


def _entries(values: Any, call: str) -> List[Tuple[str, Optional[str]]]:
    if not isinstance(values, dict):
        raise TypeError(f"{call} takes a dict of str keys to str (or None) values, not {type(values).__name__}")
    out = []
    for k, v in values.items():
        if not isinstance(k, str):
            raise TypeError(f"{call}: keys must be str, not {type(k).__name__} ({k!r})")
        if v is not None and not isinstance(v, str):
            raise TypeError(f"{call}: the value of {k!r} must be str or None, not {type(v).__name__}")
        out.append((k, v))
    return out


def _field_paths(schema: Any) -> List[str]:
    """Every field's dotted path (struct children under their parent), sorted."""
    import pyarrow as pa

    out: List[str] = []

    def walk(field: Any, prefix: str) -> None:
        path = prefix + field.name
        out.append(path)
        t = field.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), path + ".")
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_field, path + ".")

    for f in schema:
        walk(f, "")
    return sorted(out)


class _MetadataMixin:
    """The config and metadata methods of :class:`lancer.LanceDataset`."""

    _inner: Any

    def config(self) -> Dict[str, str]:
        """This version's config (e.g. ``lance.auto_cleanup.interval``)."""
        return dict(self._inner.metadata()[1])

    @property
    def metadata(self) -> Dict[str, str]:
        """This version's table metadata."""
        return dict(self._inner.metadata()[0])

    @property
    def schema_metadata(self) -> Dict[str, str]:
        """This version's schema metadata."""
        return dict(_lancer.schema_metadata(self._inner))

    def _update(self, **changes: Any) -> None:
        # (from this handle's version: a concurrent change of the same key is a conflict)
        self._inner = _lancer.update_metadata(self._inner, **changes)

    def update_config(self, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
        """Sets config keys (``None`` removes one); ``replace=True`` makes the config
        exactly ``values``. One commit; returns the new config."""
        self._update(config=(_entries(values, "update_config"), bool(replace)))
        return self.config()

    def delete_config_keys(self, keys: List[str]) -> None:
        """Removes config keys (absent ones are ignored). One commit."""
        if isinstance(keys, str):
            raise TypeError("delete_config_keys takes a list of keys, not one str")
        self._update(config=([(str(k), None) for k in keys], False))

    def update_metadata(self, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
        """As :meth:`update_config`, for the table metadata; returns it."""
        self._update(table=(_entries(values, "update_metadata"), bool(replace)))
        return self.metadata

    def update_schema_metadata(self, values: Dict[str, Optional[str]], *,
                               replace: bool = False) -> Dict[str, str]:
        """As :meth:`update_config`, for the schema metadata; returns it."""
        self._update(schema=(_entries(values, "update_schema_metadata"), bool(replace)))
        return self.schema_metadata

    def update_field_metadata(self, field_updates: Dict[str, Dict[str, Optional[str]]], *,
                              replace: bool = False) -> None:
        """Fields' metadata by path (``"a.b"`` for a struct's child): keys set or
        removed, or (``replace=True``) each named field's metadata replaced. One commit;
        an unknown field is a ``ValueError`` and nothing is committed."""
        if not isinstance(field_updates, dict):
            raise TypeError("update_field_metadata takes a dict of field paths to dicts")
        known = _field_paths(self.schema)  # type: ignore[attr-defined]
        for path in field_updates:
            if path not in known:
                # (pylance's type and wording)
                raise OSError(f"Field '{path}' not found.\nAvailable fields: {known}")
        fields = [(str(path), (_entries(vals, "update_field_metadata"), bool(replace)))
                  for path, vals in field_updates.items()]
        self._update(fields=fields)

    def replace_schema_metadata(self, new_metadata: Dict[str, str]) -> None:
        """Deprecated (as in pylance): ``update_schema_metadata(new, replace=True)``."""
        warnings.warn("replace_schema_metadata is deprecated. "
                      "Use update_schema_metadata(metadata, replace=True) instead.",
                      DeprecationWarning, stacklevel=2)
        self.update_schema_metadata(new_metadata, replace=True)

    def replace_field_metadata(self, field_name: str, new_metadata: Dict[str, str]) -> None:
        """Deprecated (as in pylance): ``update_field_metadata({name: new}, replace=True)``."""
        warnings.warn("replace_field_metadata is deprecated. "
                      "Use update_field_metadata with field paths and replace=True instead.",
                      DeprecationWarning, stacklevel=2)
        self.update_field_metadata({field_name: new_metadata}, replace=True)
