//! DataReplacement commits (spec: "DataReplacement", "DataReplacement Compatibility"):
//! applying one to a manifest, and which concurrent operations it rebases over.

use crate::pb;
use crate::pb::transaction::Operation;
use crate::{Result, TableError};

/// Applies a DataReplacement (spec: "DataReplacement"): in each named fragment the
/// data file holding exactly the new file's fields (and of its file version) takes the
/// new file's place; a fragment none of whose files holds any of those fields (they
/// were all null) gets the new file added. Every new file holds the same fields; a
/// new file that fits neither way is refused.
pub(super) fn replace_data_files(
    fragments: &mut [pb::DataFragment],
    r: &pb::transaction::DataReplacement,
) -> Result<()> {
    let mut fields: Option<&[i32]> = None;
    let mut seen = std::collections::HashSet::new();
    for g in &r.replacements {
        let new = g.new_file.as_ref().ok_or_else(|| {
            TableError::invalid(format!(
                "DataReplacement: the replacement of fragment {} has no new file",
                g.fragment_id
            ))
        })?;
        match fields {
            None => fields = Some(&new.fields),
            Some(f) if f != new.fields.as_slice() => {
                return Err(TableError::invalid(format!(
                    "DataReplacement: every new data file holds the same fields; one holds \
                     {f:?}, another {:?}: commit one DataReplacement per set of columns",
                    new.fields
                )))
            }
            Some(_) => {}
        }
        if !seen.insert(g.fragment_id) {
            return Err(TableError::invalid(format!(
                "DataReplacement: fragment {} is named twice",
                g.fragment_id
            )));
        }
        let frag = fragments
            .iter_mut()
            .find(|f| f.id == g.fragment_id)
            .ok_or_else(|| TableError::Conflict {
                what: format!(
                    "DataReplacement: fragment {} is not in the dataset (removed by a \
                     concurrent commit, or never there)",
                    g.fragment_id
                ),
            })?;
        let mut replaced = false;
        for file in &mut frag.files {
            if file.fields == new.fields
                && file.file_major_version == new.file_major_version
                && file.file_minor_version == new.file_minor_version
            {
                file.path = new.path.clone();
                file.file_size_bytes = new.file_size_bytes;
                file.base_id = new.base_id;
                replaced = true;
            }
        }
        let held: std::collections::HashSet<i32> = frag
            .files
            .iter()
            .flat_map(|f| f.fields.iter().copied())
            .collect();
        if !replaced {
            if new.fields.iter().any(|f| held.contains(f)) {
                return Err(TableError::invalid(format!(
                    "DataReplacement: fragment {}'s new file (fields {:?}, file version \
                     {}.{}) matches none of its data files, and some of those fields are in \
                     one: the new file must hold exactly the fields of the file it replaces, \
                     in the same file version",
                    g.fragment_id, new.fields, new.file_major_version, new.file_minor_version
                )));
            }
            frag.files.push(new.clone());
        }
    }
    Ok(())
}

/// The fragments and fields a DataReplacement rewrites.
fn replaced(r: &pb::transaction::DataReplacement) -> (Vec<u64>, Vec<i32>) {
    let frags = r.replacements.iter().map(|g| g.fragment_id).collect();
    let fields = r
        .replacements
        .first()
        .and_then(|g| g.new_file.as_ref())
        .map(|f| f.fields.clone())
        .unwrap_or_default();
    (frags, fields)
}

/// Whether a DataReplacement read at an older version (`mine`) rebases over `theirs`,
/// or (`mine_second`) whether `theirs`, read at an older version, rebases over the
/// replacement (spec: "DataReplacement Compatibility"). A concurrent deletion vector on
/// a target fragment is kept (the replacement is applied to the latest fragment); a
/// removed target, rows rewritten out of one, an index built on a replaced field, a
/// rewrite of a target or another replacement of the same columns there conflict.
pub(super) fn compatible(
    repl: &pb::transaction::DataReplacement,
    other: &Operation,
    repl_is_mine: bool,
) -> bool {
    let (frags, fields) = replaced(repl);
    let overlaps = |ids: &[u64]| ids.iter().any(|id| frags.contains(id));
    let on_fields = |c: &pb::transaction::CreateIndex| {
        c.new_indices
            .iter()
            .any(|i| i.fields.iter().any(|f| fields.contains(f)))
    };
    match other {
        Operation::Append(_) | Operation::ReserveFragments(_) => true,
        // ours applies on the latest fragment, keeping its new deletion file; a delete
        // read before the replacement would put the old file list back
        Operation::Delete(d) if repl_is_mine => !overlaps(&d.deleted_fragment_ids),
        Operation::Delete(_) | Operation::Update(_) => !overlaps(&super::touched(other)),
        Operation::DataReplacement(o) => {
            let (theirs, their_fields) = replaced(o);
            their_fields != fields || !theirs.iter().any(|id| frags.contains(id))
        }
        Operation::CreateIndex(c) => !on_fields(c),
        Operation::Rewrite(r) => !overlaps(&super::rewritten(r)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, fields: &[i32]) -> pb::DataFile {
        pb::DataFile {
            path: path.into(),
            fields: fields.to_vec(),
            column_indices: (0..fields.len() as i32).collect(),
            file_major_version: 2,
            file_minor_version: 1,
            ..Default::default()
        }
    }

    fn frag(id: u64, files: Vec<pb::DataFile>) -> pb::DataFragment {
        pb::DataFragment {
            id,
            files,
            physical_rows: 10,
            ..Default::default()
        }
    }

    fn op(groups: &[(u64, pb::DataFile)]) -> pb::transaction::DataReplacement {
        pb::transaction::DataReplacement {
            replacements: groups
                .iter()
                .map(|(id, f)| pb::transaction::DataReplacementGroup {
                    fragment_id: *id,
                    new_file: Some(f.clone()),
                })
                .collect(),
        }
    }

    #[test]
    fn a_matching_file_is_replaced_and_a_missing_column_added() {
        let mut frags = vec![
            frag(0, vec![file("a.lance", &[0, 1]), file("c.lance", &[2])]),
            frag(1, vec![file("b.lance", &[0, 1])]),
        ];
        replace_data_files(
            &mut frags,
            &op(&[(0, file("new0.lance", &[2])), (1, file("new1.lance", &[2]))]),
        )
        .unwrap();
        assert_eq!(frags[0].files[1].path, "new0.lance");
        assert_eq!(frags[0].files.len(), 2);
        // fragment 1 had no file of field 2: the new one is added
        assert_eq!(frags[1].files.len(), 2);
        assert_eq!(frags[1].files[1].path, "new1.lance");
    }

    #[test]
    fn replacements_that_do_not_fit_are_refused() {
        let frags = vec![
            frag(0, vec![file("a.lance", &[0, 1])]),
            frag(1, vec![file("b.lance", &[0, 1])]),
        ];
        for (bad, says) in [
            (op(&[(0, file("n.lance", &[1]))]), "matches none"),
            (
                op(&[(0, file("n.lance", &[0, 1])), (1, file("m.lance", &[1]))]),
                "same fields",
            ),
            (
                op(&[(0, file("n.lance", &[0, 1])), (0, file("m.lance", &[0, 1]))]),
                "twice",
            ),
            (op(&[(7, file("n.lance", &[0, 1]))]), "fragment 7"),
        ] {
            let mut f = frags.clone();
            let err = replace_data_files(&mut f, &bad).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn what_a_replacement_rebases_over() {
        let mine = op(&[(0, file("n.lance", &[2]))]);
        let delete = |removed: Vec<u64>, updated: Vec<u64>| {
            Operation::Delete(pb::transaction::Delete {
                updated_fragments: updated.into_iter().map(|i| frag(i, vec![])).collect(),
                deleted_fragment_ids: removed,
                predicate: String::new(),
            })
        };
        let index_on = |field: i32| {
            Operation::CreateIndex(pb::transaction::CreateIndex {
                new_indices: vec![pb::IndexMetadata {
                    fields: vec![field],
                    ..Default::default()
                }],
                removed_indices: vec![],
            })
        };
        let append = Operation::Append(pb::transaction::Append { fragments: vec![] });
        assert!(compatible(&mine, &append, true));
        // a deletion vector on the target is kept; the target removed is a conflict
        assert!(compatible(&mine, &delete(vec![], vec![0]), true));
        assert!(!compatible(&mine, &delete(vec![0], vec![]), true));
        // a delete read before the replacement would put the old file list back
        assert!(!compatible(&mine, &delete(vec![], vec![0]), false));
        assert!(compatible(&mine, &delete(vec![], vec![5]), false));
        assert!(!compatible(&mine, &index_on(2), true));
        assert!(compatible(&mine, &index_on(1), true));
        let again = Operation::DataReplacement(op(&[(0, file("o.lance", &[2]))]));
        assert!(!compatible(&mine, &again, true));
        let elsewhere = Operation::DataReplacement(op(&[(3, file("o.lance", &[2]))]));
        assert!(compatible(&mine, &elsewhere, true));
        let overwrite = Operation::Overwrite(pb::transaction::Overwrite::default());
        assert!(!compatible(&mine, &overwrite, true));
    }
}
