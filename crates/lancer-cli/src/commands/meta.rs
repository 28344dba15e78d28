//! `lancer meta`: a dataset's config, table metadata, schema metadata and fields'
//! metadata, shown or changed by a metadata-only commit (`lancer::table::config`).

use std::collections::BTreeMap;
use std::path::Path;

use lancer::file::LanceField;
use lancer::{Dataset, Session};
use lancer::{MapUpdate, MetadataUpdate};

use super::{report, CmdResult};

/// `lancer meta`.
pub fn run(
    s: &Session,
    path: &Path,
    map: &str,
    set: &[String],
    unset: &[String],
    replace: bool,
    json: bool,
) -> CmdResult {
    let mut ds = s.open(path)?;
    if !set.is_empty() || !unset.is_empty() || replace {
        let mut entries = Vec::new();
        for pair in set {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("--set {pair:?}: write KEY=VALUE"))?;
            entries.push((k.to_string(), Some(v.to_string())));
        }
        if replace && !unset.is_empty() {
            return Err("--replace makes the map exactly the --set pairs: drop --unset".into());
        }
        entries.extend(unset.iter().map(|k| (k.clone(), None)));
        let change = MapUpdate { entries, replace };
        let mut update = MetadataUpdate::default();
        match map {
            "config" => update.config = Some(change),
            "table" => update.table = Some(change),
            "schema" => update.schema = Some(change),
            other => match other.strip_prefix("field:") {
                Some(field) if !field.is_empty() => update.fields.push((field.to_string(), change)),
                _ => {
                    return Err(
                        format!("--map {other:?}: use config, table, schema or field:PATH").into(),
                    )
                }
            },
        }
        ds = ds.update_metadata(&update)?;
    }
    let maps = maps(&ds);
    report(
        json,
        serde_json::json!({ "version": ds.version(), "maps": maps }),
        || {
            let mut out = format!("version {}", ds.version());
            for (name, m) in &maps {
                out.push_str(&format!("\n{name}:"));
                if m.is_empty() {
                    out.push_str(" (empty)");
                }
                for (k, v) in m {
                    out.push_str(&format!("\n  {k} = {v}"));
                }
            }
            out
        },
    )
}

/// Every map by name: `config`, `table`, `schema`, then `field:PATH` for fields that
/// have metadata.
fn maps(ds: &Dataset) -> Vec<(String, BTreeMap<String, String>)> {
    let pb = &ds.manifest().pb;
    let text = |m: &std::collections::HashMap<String, Vec<u8>>| {
        m.iter()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
            .collect::<BTreeMap<_, _>>()
    };
    let mut out = vec![
        (
            "config".to_string(),
            pb.config.clone().into_iter().collect(),
        ),
        (
            "table".to_string(),
            pb.table_metadata.clone().into_iter().collect(),
        ),
        ("schema".to_string(), text(&pb.schema_metadata)),
    ];
    fn walk(f: &LanceField, prefix: &str, out: &mut Vec<(String, BTreeMap<String, String>)>) {
        let path = format!("{prefix}{}", f.name);
        if !f.metadata.is_empty() {
            out.push((
                format!("field:{path}"),
                f.metadata.clone().into_iter().collect(),
            ));
        }
        for c in &f.children {
            walk(c, &format!("{path}."), out);
        }
    }
    for f in &ds.manifest().schema.fields {
        walk(f, "", &mut out);
    }
    out
}
