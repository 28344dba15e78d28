//! Committed transactions read back (spec: "Transactions" — every version's manifest
//! names the transaction file its commit wrote under `_transactions/`): the operation,
//! read version, uuid and properties a version was made with, as pylance's
//! `LanceDataset.read_transaction` / `get_transactions` return them.

use lancer_table::pb;
use lancer_table::{Dataset, TableError};

use crate::Result;

/// The transaction that made `version` of `ds`'s dataset (None: the version has no
/// readable transaction file — versions written before transaction files existed, or
/// whose file is damaged). A version that does not exist is an error.
pub fn read_transaction(ds: &Dataset, version: u64) -> Result<Option<pb::Transaction>> {
    let at = if version == ds.version() {
        ds.clone()
    } else {
        ds.at_version(version)?
    };
    Ok(lancer_table::commit::read_transaction(
        at.store(),
        &at.manifest().pb,
    ))
}

/// The transactions of `ds`'s version and the ones before it, newest first: at least
/// the current version's, at most `recent` (pylance's `get_transactions` counts the
/// same way), ending early at the first version that no longer exists (cleaned up, or
/// before version 1). An entry is None where a version has no readable transaction
/// file.
pub fn recent_transactions(ds: &Dataset, recent: usize) -> Result<Vec<Option<pb::Transaction>>> {
    let mut out = vec![read_transaction(ds, ds.version())?];
    let mut v = ds.version();
    while out.len() < recent && v > 1 {
        v -= 1;
        match read_transaction(ds, v) {
            Ok(t) => out.push(t),
            Err(crate::Error::Table(TableError::NotFound { .. })) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
