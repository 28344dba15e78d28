//! Writing Lance 2.1 / 2.2 data files.

pub mod shred;

use std::collections::VecDeque;

use arrow_array::ArrayRef;
use arrow_schema::Field;

use crate::schema::LanceField;
use crate::structural::unravel::unravel;
use crate::structural::LeafRun;
use crate::Result;

/// Shreds `array` and rebuilds it through the reader's unravelling and assembly: the
/// identity for every array the writer can store (used to check the writer's levels).
pub fn reassemble(field: &Field, lf: &LanceField, array: &ArrayRef) -> Result<ArrayRef> {
    let mut leaves = VecDeque::new();
    for s in shred::shred(lf, array)? {
        let run = LeafRun {
            rep: s.rep,
            def: s.def,
            num_rows: s.num_rows as u64,
            values: s.values,
        };
        leaves.push_back(unravel(run, &s.layers)?);
    }
    crate::reader::assemble(field, lf, &mut leaves, 0, array.len())
}
