"""Type stubs of the native module (crates/lancer-python)."""

from typing import Any, Dict, List, Optional, Tuple, Union

import pyarrow as pa

__version__: str

class CommitConflictError(OSError): ...
class InvalidInputError(ValueError, OSError): ...
class CorruptDataError(OSError): ...

class Dataset:
    @staticmethod
    def open(
        uri: str,
        version: Optional[int] = None,
        tag: Optional[str] = None,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> "Dataset": ...
    @property
    def uri(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def stable_row_ids(self) -> bool: ...
    @property
    def data_storage_version(self) -> str: ...
    def checkout(self, version: int) -> "Dataset": ...
    def latest(self) -> "Dataset": ...
    def versions(self) -> List[Tuple[int, int, int, List[Tuple[str, str]]]]: ...
    def metadata(self) -> Tuple[Dict[str, str], Dict[str, str]]: ...
    def tags(self) -> List[Tuple[str, int]]: ...
    def create_tag(self, name: str, version: int, replace: bool = False) -> None: ...
    def delete_tag(self, name: str) -> None: ...
    def count_rows(self, filter: Optional[str] = None) -> int: ...
    def scan(
        self,
        columns: Optional[List[str]] = None,
        filter: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_size: Optional[int] = None,
        fragments: Optional[List[int]] = None,
        use_scalar_index: bool = True,
        project: Optional[List[Tuple[str, str]]] = None,
        join: bool = False,
    ) -> pa.RecordBatchReader: ...
    def explain(self, columns: Optional[List[str]] = None, filter: Optional[str] = None) -> str: ...
    def take(self, indices: Union[List[int], bytes], columns: Optional[List[str]] = None) -> pa.Table: ...
    def take_rows(self, ids: Union[List[int], bytes], columns: Optional[List[str]] = None) -> pa.Table: ...
    def delete(self, filter: str) -> "Dataset": ...
    def restore(self) -> "Dataset": ...
    def fragments(self) -> List[dict]: ...
    def nearest(
        self,
        column: str,
        q: List[float],
        k: int,
        metric: Optional[str] = None,
        nprobes: Optional[int] = None,
        refine_factor: Optional[int] = None,
        filter: Optional[str] = None,
        prefilter: bool = True,
        columns: Optional[List[str]] = None,
        use_index: bool = True,
        with_row_id: bool = False,
        with_row_address: bool = False,
        explain: bool = False,
        fast_search: bool = False,
        minimum_nprobes: Optional[int] = None,
        maximum_nprobes: Optional[int] = None,
        ef: Optional[int] = None,
        approx_mode: Optional[str] = None,
    ) -> Any: ...
    def full_text_search(
        self,
        query: Optional[str],
        column: Optional[str] = None,
        query_json: Optional[str] = None,
        limit: Optional[int] = None,
        filter: Optional[str] = None,
        prefilter: bool = False,
        columns: Optional[List[str]] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        explain: bool = False,
    ) -> Any: ...
    def create_index(
        self,
        column: str,
        index_type: str,
        name: Optional[str] = None,
        replace: bool = False,
        metric: Optional[str] = None,
        num_partitions: Optional[int] = None,
        num_sub_vectors: Optional[int] = None,
        num_bits: Optional[int] = None,
        sample_rate: Optional[int] = None,
        max_iterations: Optional[int] = None,
        analyzer_json: Optional[str] = None,
        zone_size: Optional[int] = None,
        rows_per_zone: Optional[int] = None,
        bloom_items: Optional[int] = None,
        bloom_probability: Optional[float] = None,
        progress: Any = None,
        m: Optional[int] = None,
        ef_construction: Optional[int] = None,
        max_level: Optional[int] = None,
        json_path: Optional[str] = None,
        target_index_type: Optional[str] = None,
    ) -> "Dataset": ...
    def list_segments(self) -> List[dict]: ...
    def describe_indices(self) -> List[dict]: ...
    def index_statistics(self, name: str) -> str: ...
    def dataset_stats(self, max_rows_per_group: int) -> Tuple[int, int, int]: ...
    def data_stats(self) -> List[Tuple[int, int]]: ...
    def drop_index(self, name: str) -> "Dataset": ...

def write(
    reader: pa.RecordBatchReader,
    uri: str,
    mode: str = "create",
    max_rows_per_file: Optional[int] = None,
    max_bytes_per_file: Optional[int] = None,
    data_storage_version: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    enable_stable_row_ids: bool = False,
    transaction_properties: Optional[Dict[str, str]] = None,
    auto_cleanup: Optional[Tuple[int, int]] = None,
    skip_auto_cleanup: bool = False,
) -> Dataset: ...
def update_metadata(
    ds: Dataset,
    config: Optional[Tuple[List[Tuple[str, Optional[str]]], bool]] = None,
    table: Optional[Tuple[List[Tuple[str, Optional[str]]], bool]] = None,
    schema: Optional[Tuple[List[Tuple[str, Optional[str]]], bool]] = None,
    fields: Optional[List[Tuple[str, Tuple[List[Tuple[str, Optional[str]]], bool]]]] = None,
) -> Dataset: ...
def schema_metadata(ds: Dataset) -> Dict[str, str]: ...
def cleanup(
    uri: str,
    older_than_seconds: Optional[float] = None,
    retain_versions: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    delete_unverified: bool = False,
    error_if_tagged: bool = True,
) -> Tuple[int, int, int, int, int, int]: ...

def write_fragments(
    reader: pa.RecordBatchReader,
    uri: str,
    mode: str,
    max_rows_per_file: int,
    max_bytes_per_file: int,
    data_storage_version: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> List[str]: ...
def commit(
    uri: str,
    kind: str,
    body: str,
    schema: Optional[pa.Schema] = None,
    read_version: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    transaction_properties: Optional[Dict[str, str]] = None,
    v2_manifest_paths: bool = True,
    enable_stable_row_ids: bool = False,
) -> Dataset: ...
def fragment_metadata(ds: Dataset, id: int) -> Optional[str]: ...
def fragment_delete(
    ds: Dataset, id: int, predicate: Optional[str] = None, offsets: Optional[List[int]] = None
) -> Optional[str]: ...

def discover_plan(
    uri: str,
    version: Optional[int] = None,
    tag: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> Tuple[str, int]: ...

class EpochReader:
    def __iter__(self) -> "EpochReader": ...
    def __next__(self) -> pa.RecordBatch: ...
    def state(self) -> Tuple[int, int, int, int]: ...

class Loader:
    def __init__(
        self,
        plan_json: str,
        rank: int = 0,
        world_size: int = 1,
        worker: int = 0,
        num_workers: int = 1,
        columns: Optional[List[str]] = None,
        filter: Optional[str] = None,
        batch_size: int = 1024,
        shuffle: str = "none",
        buffer: int = 65536,
        seed: int = 0,
        tail: str = "keep",
        cache_entries: int = 256,
        prefetch: bool = True,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> None: ...
    def rows_in_epoch(self, epoch: int) -> int: ...
    def read(self, epoch: int, block: int = 0, offset: int = 0, rows: int = 0) -> EpochReader: ...
